"""`ExecAdapter`: durable work done by a stateless program named by ``keep+exec://`` URLs.

``ctx.exec.call({adapter: "keep+exec://<program>/<path>?<query>", params})`` runs
``<program>`` (found on ``$PATH``) once for ``start`` and once per poll. The
program reads one JSON request on stdin::

    {"operation": "start" | "poll", "callId": "...", "invocationId": "...",
     "correlationKey": "...", "path": "<path>", "query": {...}, "params": ...,
     "token": null | "<prior token>"}

and writes one JSON answer on stdout: ``{"status": "pending", "token": "...",
"externalId": "..."}`` or ``{"status": "done", "ok": true, "result": ...}`` or
``{"status": "done", "ok": false, "error": "..."}``. It keeps no records: the
host persists tokens, attempts and results. A program that exits non-zero,
times out, or prints anything else is a failed call (`TransientError` for a
timeout, `ConnectorError` otherwise) and is retried with the same token.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from typing import Annotated, Any, ClassVar
from urllib.parse import parse_qsl, urlsplit

from pydantic import BaseModel, ConfigDict, Field, JsonValue, TypeAdapter, ValidationError

from keep_sdk.connectors.base import Connector
from keep_sdk.connectors.operation import operation
from keep_sdk.contract.durable import Done, DurableAnswer, InvocationContext
from keep_sdk.errors import ConnectorError, InvalidArguments, TransientError
from keep_sdk.model import OperationKind

__all__ = ["ExecAdapter", "ExecCall", "parse_exec_url"]

_PROGRAM = re.compile(r"^[a-z0-9][a-z0-9._-]{0,99}$")
_ANSWER: TypeAdapter[DurableAnswer] = TypeAdapter(DurableAnswer)
_MAX_OUTPUT = 1024 * 1024


def parse_exec_url(url: str) -> tuple[str, str, dict[str, str]]:
    """``keep+exec://<program>/<path>?<query>`` as ``(program, path, query)``.

    Raises `InvalidArguments` saying what a valid URL looks like.
    """
    parts = urlsplit(url)
    if parts.scheme != "keep+exec" or not _PROGRAM.match(parts.netloc or ""):
        raise InvalidArguments(
            f"invalid adapter URL {url!r}: use keep+exec://<program>/<path>?<query>, where "
            "<program> is the lowercase name of an executable on $PATH",
            problems=[f"adapter {url!r} is not keep+exec://<program>/..."],
        )
    return parts.netloc, parts.path.lstrip("/"), dict(parse_qsl(parts.query))


class ExecCall(BaseModel):
    """Arguments of ``ctx.exec.call``."""

    model_config = ConfigDict(extra="forbid")

    adapter: Annotated[str, Field(min_length=12, max_length=2000)]
    params: JsonValue = None


class ExecAdapter(Connector):
    """Durable work by an executable adapter (see the module docstring for the protocol)."""

    name = "exec"
    timeout_s: ClassVar[float] = 60.0

    def __init__(self, *, path: str | None = None, timeout_s: float | None = None) -> None:
        self.search_path = path
        self.call_timeout_s = timeout_s if timeout_s is not None else self.timeout_s

    @operation(kind=OperationKind.DURABLE, permission="exec.call", args=ExecCall, timeout="P7D")
    def call(self, args: ExecCall, *, invocation: InvocationContext) -> DurableAnswer:
        """Start the adapter's work; the host polls it with the token it answers."""
        return self._run("start", args, invocation)

    @call.poller
    def poll_call(self, args: ExecCall, *, invocation: InvocationContext) -> DurableAnswer:
        """Ask the adapter how the work is going, passing the newest token."""
        return self._run("poll", args, invocation)

    def _run(self, what: str, args: ExecCall, invocation: InvocationContext) -> DurableAnswer:
        program, path, query = parse_exec_url(args.adapter)
        search = self.search_path if self.search_path is not None else os.environ.get("PATH")
        executable = shutil.which(program, path=search)
        if executable is None:
            raise ConnectorError(
                f"adapter program {program!r} is not on $PATH; install it or fix the "
                f"keep+exec:// URL {args.adapter!r}"
            )
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
            done = subprocess.run(
                [executable],
                input=json.dumps(request),
                capture_output=True,
                text=True,
                timeout=self.call_timeout_s,
                check=False,
            )
        except subprocess.TimeoutExpired:
            raise TransientError(
                f"adapter {program!r} did not answer {what} within {self.call_timeout_s:g}s"
            ) from None
        if done.returncode != 0:
            tail = " ".join(done.stderr.strip().splitlines()[-3:])[:500] or "no stderr"
            raise ConnectorError(
                f"adapter {program!r} exited with status {done.returncode} on {what}: {tail}"
            )
        return _answer(program, what, done.stdout)


def _answer(program: str, what: str, stdout: str) -> DurableAnswer:
    shown = stdout.strip()[:200]
    try:
        raw: Any = json.loads(stdout[:_MAX_OUTPUT])
        answer = _ANSWER.validate_python(raw)
    except (json.JSONDecodeError, ValidationError) as exc:
        detail = str(exc).splitlines()[0]
        raise ConnectorError(
            f"adapter {program!r} answered {what} with {shown!r}, which is not a pending or "
            f"done answer ({detail}); it must print one JSON object such as "
            '{"status": "pending", "token": "..."}'
        ) from None
    if isinstance(answer, Done) and not answer.ok and not answer.error:
        return answer.model_copy(update={"error": f"adapter {program!r} reported a failure"})
    return answer
