"""`ExecAdapter`: durable work done by an operator-listed program named by ``keep+exec://`` URLs.

``ctx.exec.call({adapter: "keep+exec://<adapter>/<path>?<query>", params})`` runs
the program that keep.toml lists as ``<adapter>`` (``[connectors.exec.adapters.<adapter>]``,
see `ExecSettings`) once for ``start`` and once per poll. A script names an
adapter, never a program: a name not in the list is refused before anything
runs. The program is started without a shell, with its fixed arguments and
only the allow-listed environment variables. It reads one JSON request on stdin::

    {"operation": "start" | "poll", "callId": "...", "invocationId": "...",
     "correlationKey": "...", "path": "<path>", "query": {...}, "params": ...,
     "token": null | "<prior token>"}

and writes one JSON answer on stdout: ``{"status": "pending", "token": "...",
"externalId": "..."}`` or ``{"status": "done", "ok": true, "result": ...}`` or
``{"status": "done", "ok": false, "error": "..."}``. It keeps no records: the
host persists tokens, attempts and results. A program that exits non-zero,
times out, prints more than ``max_output_bytes`` or prints anything else is a
failed call (`TransientError` for a timeout, `ConnectorError` otherwise) and is
retried with the same token. Error texts quote at most the tail of stderr and
the head of stdout, with the values of the variables passed to it masked before
they are cut (so no part of a cut value shows).
"""

from __future__ import annotations

import json
import os
import re
import shutil
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Annotated, Any, ClassVar
from urllib.parse import parse_qsl, urlsplit

from pydantic import BaseModel, ConfigDict, Field, JsonValue, TypeAdapter, ValidationError

from keep_sdk.connectors._exec_settings import DEFAULT_ENV, ExecSettings
from keep_sdk.connectors._process import run_bounded
from keep_sdk.connectors.base import Connector
from keep_sdk.connectors.operation import operation
from keep_sdk.connectors.secrets import Redactor
from keep_sdk.contract.durable import Done, DurableAnswer, InvocationContext
from keep_sdk.errors import ConfigurationError, ConnectorError, InvalidArguments, TransientError
from keep_sdk.model import OperationKind

__all__ = ["ExecAdapter", "ExecCall", "ExecProgramSpec", "build", "parse_exec_url"]

_ADAPTER = re.compile(r"^[a-z0-9][a-z0-9._-]{0,99}$")
_ANSWER: TypeAdapter[DurableAnswer] = TypeAdapter(DurableAnswer)
_MAX_OUTPUT = 1024 * 1024
_SECRET_MIN = 4


def parse_exec_url(url: str) -> tuple[str, str, dict[str, str]]:
    """``keep+exec://<adapter>/<path>?<query>`` as ``(adapter, path, query)``.

    Raises `InvalidArguments` saying what a valid URL looks like.
    """
    parts = urlsplit(url)
    if parts.scheme != "keep+exec" or not _ADAPTER.match(parts.netloc or ""):
        raise InvalidArguments(
            f"invalid adapter URL {url!r}: use keep+exec://<adapter>/<path>?<query>, where "
            "<adapter> is the lowercase name of an adapter listed in keep.toml",
            problems=[f"adapter {url!r} is not keep+exec://<adapter>/..."],
        )
    return parts.netloc, parts.path.lstrip("/"), dict(parse_qsl(parts.query))


@dataclass(frozen=True)
class ExecProgramSpec:
    """One allowed program, resolved: `argv` starts with an absolute path."""

    argv: tuple[str, ...]
    env: tuple[str, ...] = DEFAULT_ENV
    timeout_s: float | None = None

    @classmethod
    def resolve(
        cls,
        program: str,
        args: tuple[str, ...] = (),
        *,
        env: tuple[str, ...] = DEFAULT_ENV,
        timeout_s: float | None = None,
        search_path: str | None = None,
    ) -> ExecProgramSpec:
        """`program` as an absolute executable path (looked up on `search_path`, default
        ``$PATH``, when it is a bare name); `ConfigurationError` when there is none."""
        if os.path.isabs(program):
            found = program if os.access(program, os.X_OK) and os.path.isfile(program) else None
        else:
            found = shutil.which(program, path=search_path or os.environ.get("PATH"))
        if found is None:
            raise ConfigurationError(
                f"adapter program {program!r} is not an executable file"
                + ("" if os.path.isabs(program) else " on $PATH")
                + ": install it or fix `program` in keep.toml"
            )
        return cls(argv=(os.path.abspath(found), *args), env=env, timeout_s=timeout_s)


class ExecCall(BaseModel):
    """Arguments of ``ctx.exec.call``."""

    model_config = ConfigDict(extra="forbid")

    adapter: Annotated[str, Field(min_length=12, max_length=2000)]
    params: JsonValue = None


class ExecAdapter(Connector):
    """Durable work by an operator-listed program (see the module docstring for the protocol).

    `adapters` maps each adapter name scripts may use to its resolved program;
    an instance without adapters refuses every call.
    """

    name = "exec"
    timeout_s: ClassVar[float] = 60.0

    def __init__(
        self,
        *,
        adapters: Mapping[str, ExecProgramSpec] | None = None,
        timeout_s: float | None = None,
        max_output_bytes: int = _MAX_OUTPUT,
    ) -> None:
        self.adapters = dict(adapters or {})
        self.call_timeout_s = timeout_s if timeout_s is not None else self.timeout_s
        self.max_output_bytes = max_output_bytes

    @operation(kind=OperationKind.DURABLE, permission="exec.call", args=ExecCall, timeout="P7D")
    def call(self, args: ExecCall, *, invocation: InvocationContext) -> DurableAnswer:
        """Start the adapter's work; the host polls it with the token it answers."""
        return self._run("start", args, invocation)

    @call.poller
    def poll_call(self, args: ExecCall, *, invocation: InvocationContext) -> DurableAnswer:
        """Ask the adapter how the work is going, passing the newest token."""
        return self._run("poll", args, invocation)

    def _program(self, name: str) -> ExecProgramSpec:
        spec = self.adapters.get(name)
        if spec is None:
            known = ", ".join(sorted(self.adapters)) or "none are declared"
            raise InvalidArguments(
                f"adapter {name!r} is not an adapter listed in keep.toml (listed: {known}); "
                f"an operator adds it under [connectors.{self.name}.adapters.{name}]",
                problems=[f"adapter {name!r} is not listed"],
            )
        return spec

    def _run(self, what: str, args: ExecCall, invocation: InvocationContext) -> DurableAnswer:
        adapter, path, query = parse_exec_url(args.adapter)
        try:
            spec = self._program(adapter)
        except InvalidArguments as refused:
            return Done(ok=False, error=str(refused))
        env = {name: os.environ[name] for name in spec.env if name in os.environ}
        masked = Redactor(v for v in env.values() if len(v) >= _SECRET_MIN)
        timeout_s = spec.timeout_s if spec.timeout_s is not None else self.call_timeout_s
        request = {
            "operation": what,
            "callId": f"{invocation.invocation_id}:{what}",
            "invocationId": invocation.invocation_id,
            "correlationKey": invocation.correlation_key,
            "path": path,
            "query": query,
            "params": args.params,
            "token": invocation.token,
        }
        try:
            done = run_bounded(
                spec.argv,
                stdin=json.dumps(request).encode(),
                env=env,
                timeout_s=timeout_s,
                max_stdout_bytes=self.max_output_bytes,
            )
        except OSError as exc:
            raise ConnectorError(
                f"adapter {adapter!r} could not be started ({exc.strerror or exc}); "
                "check `program` in keep.toml"
            ) from None
        if done.timed_out:
            raise TransientError(f"adapter {adapter!r} did not answer {what} within {timeout_s:g}s")
        if done.overflowed:
            raise ConnectorError(
                f"adapter {adapter!r} printed more than {self.max_output_bytes} bytes on {what} "
                "and was stopped; raise max_output_bytes in keep.toml or make it print less"
            )
        if done.returncode != 0:
            stderr = done.stderr_tail.decode("utf-8", "replace")
            tail = masked(" ".join(stderr.strip().splitlines()[-3:]))[-500:] or "no stderr"
            raise ConnectorError(
                f"adapter {adapter!r} exited with status {done.returncode} on {what}: {tail}"
            )
        return _answer(adapter, what, done.stdout.decode("utf-8", "replace"), masked)


def _answer(adapter: str, what: str, stdout: str, masked: Redactor) -> DurableAnswer:
    shown = masked(stdout.strip())[:200]
    try:
        raw: Any = json.loads(stdout)
        answer = _ANSWER.validate_python(raw)
    except (json.JSONDecodeError, ValidationError) as exc:
        detail = masked(str(exc).splitlines()[0])[:200]
        raise ConnectorError(
            f"adapter {adapter!r} answered {what} with {shown!r}, which is not a pending or "
            f"done answer ({detail}); it must print one JSON object such as "
            '{"status": "pending", "token": "..."}'
        ) from None
    if isinstance(answer, Done) and not answer.ok and not answer.error:
        return answer.model_copy(update={"error": f"adapter {adapter!r} reported a failure"})
    return answer


def build(name: str, settings: ExecSettings) -> Connector:
    """The `ExecAdapter` instance `name` with the programs of `settings`, each resolved now."""
    adapters = {}
    for adapter, program in sorted(settings.adapters.items()):
        try:
            adapters[adapter] = ExecProgramSpec.resolve(
                program.program,
                tuple(program.args),
                env=tuple(program.env),
                timeout_s=program.timeout_s,
            )
        except ConfigurationError as exc:
            raise ConfigurationError(f"connectors.{name}.adapters.{adapter}: {exc}") from None
    cls: type[ExecAdapter] = type(
        f"ExecAdapter[{name}]",
        (ExecAdapter,),
        {"name": name, "description": settings.description or ExecAdapter.description},
    )
    return cls(
        adapters=adapters,
        timeout_s=settings.timeout_s,
        max_output_bytes=settings.max_output_bytes,
    )
