"""Run one handler phase in a fresh QuickJS context, in this process.

The loop follows the async bridge of the design: the prelude's stubs queue ctx
calls as JSON lines; between entries into the engine the host drains the queue,
checks and performs each call, and settles its promise through the prelude's
``dispatch`` closure. Every entry (prelude, module, dispatch, job) is bounded by
the `InterruptGuard` deadlines; any exception out of an entry ends the phase and
the context is never entered again.
"""

from __future__ import annotations

import json
import time
from functools import lru_cache
from importlib import resources
from typing import Any, Final, NoReturn

import quickjs
from pydantic import JsonValue

from keep_sdk.errors import KeepError
from keep_sdk.model import HandlerPhase
from keep_sdk.sandbox.arguments import connector_arguments, json_depth, topic_arguments
from keep_sdk.sandbox.bytecode import PreludeLoader
from keep_sdk.sandbox.capabilities import Capabilities
from keep_sdk.sandbox.failures import (
    PRELUDE_PAD,
    outcome_for_engine_exception,
    outcome_for_host_error,
    outcome_for_thrown,
    script_location,
)
from keep_sdk.sandbox.host import HostInterface
from keep_sdk.sandbox.interrupt import CPU_TIME, WALL_TIME, InterruptGuard
from keep_sdk.sandbox.outcome import (
    Completed,
    ConsoleLine,
    HostCall,
    InternalFailure,
    Limit,
    LimitFailure,
    LogicFailure,
    MutationRequested,
    Outcome,
    PhaseRequest,
    PhaseResult,
    Trace,
)
from keep_sdk.sandbox.stack import safe_stack_bytes

__all__ = ["PhaseRun", "prelude_source", "run_phase"]

_MAX_LINE_CHARS: Final = 8_192
_ENCODER: Final = json.JSONEncoder(allow_nan=False)
_DEFAULT_THREAD_STACK: Final = 8 * 1024 * 1024
_MIN_STACK: Final = 16 * 1024
_STATE_PHASES: Final = (HandlerPhase.PRODUCER, HandlerPhase.NEXT)


@lru_cache(maxsize=1)
def prelude_source() -> str:
    """The prelude as one line behind `PRELUDE_PAD` spaces (see prelude.js)."""
    text = resources.files("keep_sdk.sandbox").joinpath("prelude.js").read_text("utf-8")
    lines = (line.strip() for line in text.splitlines())
    return " " * PRELUDE_PAD + " ".join(
        line for line in lines if line and not line.startswith("//")
    )


@lru_cache(maxsize=1)
def _prelude_loader() -> PreludeLoader:
    return PreludeLoader(prelude_source())


class _Site:
    """Where in the script a ctx call was made, parsed from its stack only when asked."""

    __slots__ = ("_parsed", "_stack")

    def __init__(self, stack: str) -> None:
        self._stack = stack
        self._parsed: tuple[int | None, int | None] | None = None

    def _location(self) -> tuple[int | None, int | None]:
        if self._parsed is None:
            self._parsed = script_location(self._stack)
        return self._parsed

    @property
    def line(self) -> int | None:
        return self._location()[0]

    @property
    def column(self) -> int | None:
        return self._location()[1]


class _Finished(Exception):
    def __init__(self, outcome: Outcome) -> None:
        super().__init__(outcome.kind)
        self.outcome = outcome


def _finish(outcome: Outcome) -> NoReturn:
    raise _Finished(outcome)


class PhaseRun:
    """One phase in one fresh context. Use once: ``PhaseRun(request, host).run()``.

    `exposed` widens what the script's ``ctx`` contains without widening what the
    host accepts; tests use it to prove the host-side refusal.
    """

    def __init__(
        self,
        request: PhaseRequest,
        host: HostInterface,
        *,
        exposed: Capabilities | None = None,
    ) -> None:
        self._request = request
        self._host = host
        self._limits = request.policy.sandbox
        self._allowed = Capabilities.for_phase(request.manifest, request.phase, request.policy)
        self._exposed = exposed or self._allowed
        self._console: list[ConsoleLine] = []
        self._console_chars = 0
        self._calls: list[HostCall] = []
        self._call_count = 0
        self._jobs = 0
        self._js_used = 0.0
        self._wall_at = 0.0
        self._mutation: MutationRequested | None = None
        self._can_mutate = any(map(self._allowed.is_mutation, self._allowed.operations))
        self._guard: InterruptGuard | None = None
        self._dispatch: Any = None

    def run(self) -> PhaseResult:
        """Run the phase to its outcome. Never raises."""
        started = time.monotonic()
        self._wall_at = started + self._limits.wall_time_s
        context: Any = None
        try:
            context = quickjs.Context()
            self._guard = InterruptGuard(context)
            outcome = self._drive(context)
        except _Finished as finished:
            outcome = finished.outcome
        except KeepError as exc:
            outcome = InternalFailure(message=str(exc))
        except Exception as exc:
            outcome = InternalFailure(message=f"sandbox failure: {type(exc).__name__}: {exc}")
        finally:
            if self._guard is not None:
                self._guard.close()
            self._dispatch = None
            del context
        if self._mutation is not None:
            performed = outcome is self._mutation
            self._calls.append(
                HostCall(
                    name=f"{self._mutation.connector}.{self._mutation.operation}",
                    arguments=self._mutation.arguments,
                    status="requested" if performed else "dropped",
                    error=None
                    if performed
                    else f"not requested: the phase ended as {outcome.kind}",
                    line=self._mutation.line,
                )
            )
        trace = Trace(
            console=self._console,
            calls=self._calls,
            jobs=self._jobs,
            cpu_time_s=self._js_used,
            wall_time_s=time.monotonic() - started,
        )
        return PhaseResult(outcome=outcome, trace=trace, isolation="in_process")

    def _config(self) -> str:
        limits = self._limits
        operations = [
            {
                "connector": name.partition(".")[0],
                "operation": name.partition(".")[2],
                "mutation": self._exposed.is_mutation(name),
            }
            for name in sorted(self._exposed.operations)
        ]
        determinism = self._request.determinism
        return json.dumps(
            {
                "operations": operations,
                "topicOperations": list(self._exposed.topic_operations),
                "maxCalls": limits.max_host_calls,
                "maxValueChars": limits.max_value_bytes,
                "maxLineChars": min(_MAX_LINE_CHARS, max(limits.max_log_bytes, 1)),
                "maxLogChars": limits.max_log_bytes,
                "clock": determinism.clock_ms if determinism else None,
                "seed": determinism.seed if determinism else 0,
            }
        )

    def _enter(self, function: Any, *args: Any) -> Any:
        """Call into the engine under the earlier of the phase and the JS-time deadlines."""
        assert self._guard is not None
        started = time.monotonic()
        if started >= self._wall_at:
            _finish(self._limit_failure(Limit.WALL_TIME))
        js_at = started + self._limits.cpu_time_s - self._js_used
        if js_at <= started:
            _finish(self._limit_failure(Limit.CPU_TIME))
        if js_at < self._wall_at:
            self._guard.arm(js_at, CPU_TIME)
        else:
            self._guard.arm(self._wall_at, WALL_TIME)
        try:
            return function(*args)
        except Exception as exc:
            _finish(self._entry_failure(exc))
        finally:
            self._js_used += time.monotonic() - started

    def _limit_failure(self, limit: Limit) -> LimitFailure:
        if limit is Limit.CPU_TIME:
            text = f"the script ran for more than {self._limits.cpu_time_s} s of JS time"
        else:
            text = f"the phase ran longer than its wall-clock limit of {self._limits.wall_time_s} s"
        return LimitFailure(limit=limit, message=text)

    def _entry_failure(self, exc: Exception) -> Outcome:
        assert self._guard is not None
        if self._guard.fired is not None:
            fired = Limit.CPU_TIME if self._guard.fired == CPU_TIME else Limit.WALL_TIME
            return self._limit_failure(fired)
        return outcome_for_engine_exception(exc, memory_bytes=self._limits.memory_bytes)

    def _drive(self, context: Any) -> Outcome:
        request = self._request
        if "\x00" in request.source:
            return LogicFailure(message="the script contains a NUL character; remove it")
        try:
            request.source.encode("utf-8")
        except UnicodeEncodeError as exc:
            return LogicFailure(
                message=f"the script contains a lone surrogate at offset {exc.start}; "
                "it must be valid Unicode text"
            )
        try:
            arguments = _ENCODER.encode(request.handler_arguments())
        except (TypeError, ValueError) as exc:
            return InternalFailure(message=f"the handler's arguments are not JSON: {exc}")
        context.set_memory_limit(self._limits.memory_bytes)
        context.set_max_stack_size(safe_stack_bytes(self._limits.stack_bytes))
        boot = _prelude_loader().load(context, self._enter)
        self._dispatch = self._enter(boot, self._config())
        module = self._enter(context.module, request.source)
        status = self._enter(
            self._dispatch, "run", module, request.handler, request.phase.value, arguments
        )
        if status:
            return InternalFailure(message=f"the sandbox prelude refused to start: {status[:300]}")
        while True:
            self._process(self._enter(self._dispatch, "drain"))
            if self._enter(context.execute_pending_job):
                self._jobs += 1
                if self._jobs > self._limits.max_jobs:
                    return LimitFailure(
                        limit=Limit.JOBS,
                        message=f"the script ran more than {self._limits.max_jobs} promise jobs",
                    )
                continue
            text = self._enter(self._dispatch, "drain")
            if text:
                self._process(text)
                continue
            if self._mutation is not None:
                return self._mutation
            return LogicFailure(
                message=f"{request.phase.value} of {request.handler!r} never finished: it waits "
                "for a promise that nothing will settle"
            )

    def _process(self, text: str) -> None:
        if not text:
            return
        records: list[tuple[str, Any]] = []
        for line in text.split("\n"):
            if not line:
                continue
            try:
                records.append((line, json.loads(line)))
            except (RecursionError, ValueError):
                _finish(
                    LimitFailure(
                        limit=Limit.VALUE_DEPTH,
                        message="a value crossing the sandbox boundary nests too deeply",
                    )
                )
        mutation_at = None
        if self._mutation is None and self._can_mutate:
            mutation_at = next(
                (
                    index
                    for index, (_, record) in enumerate(records)
                    if isinstance(record[0], int) and self._allowed.is_mutation(record[1])
                ),
                None,
            )
        for index, (line, record) in enumerate(records):
            head = record[0]
            if head == "log":
                self._log(record[1], record[2])
            elif head == "!":
                _finish(LimitFailure(limit=Limit(record[1]), message=str(record[2])))
            elif head == "late":
                self._drop([0, record[1], None, record[2]], "called after the mutation call")
            elif head == "done":
                if self._mutation is not None:
                    _finish(self._mutation)
                self._complete(line, record)
            elif head == "fail":
                self._fail(record[1])
            elif self._mutation is not None:
                self._drop(record, "called after the mutation call")
            elif mutation_at is not None and index < mutation_at:
                self._drop(record, "not awaited before the mutation call, which ends the phase")
            else:
                self._call(line, record)

    def _fail(self, description: dict[str, Any]) -> NoReturn:
        outcome = outcome_for_thrown(description, memory_bytes=self._limits.memory_bytes)
        if self._mutation is not None and isinstance(outcome, LogicFailure | LimitFailure):
            message = (
                f"the handler failed after its mutation call, so the mutation was not "
                f"requested: {outcome.message}"
            )
            outcome = outcome.model_copy(update={"message": message})
        _finish(outcome)

    def _log(self, level: str, text: str) -> None:
        if self._console_chars >= self._limits.max_log_bytes:
            return
        self._console_chars += len(text)
        self._console.append(ConsoleLine(level=level, text=text))

    def _drop(self, record: list[Any], reason: str) -> None:
        line, _ = script_location(record[3])
        self._calls.append(
            HostCall(name=record[1], arguments=record[2], status="dropped", error=reason, line=line)
        )

    def _complete(self, line: str, record: list[Any]) -> None:
        returned = len(record) > 1
        value = record[1] if returned else None
        if self._request.phase in _STATE_PHASES:
            limit, cap = Limit.STATE_SIZE, self._limits.max_state_bytes
        else:
            limit, cap = Limit.VALUE_SIZE, self._limits.max_value_bytes
        if len(line) - 9 > cap:
            _finish(
                LimitFailure(
                    limit=limit,
                    message=f"the {self._request.phase.value} result is larger than {cap} "
                    "characters of JSON",
                )
            )
        depth = json_depth(value, self._limits.max_value_depth, text=line)
        if depth > self._limits.max_value_depth:
            _finish(self._too_deep(f"the {self._request.phase.value} result"))
        _finish(Completed(result=value, returned=returned))

    def _too_deep(self, what: str) -> LimitFailure:
        return LimitFailure(
            limit=Limit.VALUE_DEPTH,
            message=f"{what} nests deeper than {self._limits.max_value_depth} levels",
        )

    def _refuse(self, name: str, args: JsonValue, outcome: Outcome, line: int | None) -> NoReturn:
        error = getattr(outcome, "message", outcome.kind)
        self._calls.append(
            HostCall(name=name, arguments=args, status="refused", error=error, line=line)
        )
        _finish(outcome)

    def _call(self, raw: str, record: list[Any]) -> None:
        request_id, name, args, stack = record
        site = _Site(stack)
        limits = self._limits
        try:
            operation = self._allowed.check(name)
        except KeepError as exc:
            self._refuse(
                name,
                args,
                outcome_for_host_error(exc, name, line=site.line, column=site.column),
                site.line,
            )
        self._call_count += 1
        if self._call_count > limits.max_host_calls:
            self._refuse(
                name,
                None,
                LimitFailure(
                    limit=Limit.HOST_CALLS,
                    message=f"more than {limits.max_host_calls} ctx calls in one phase",
                    line=site.line,
                    column=site.column,
                ),
                site.line,
            )
        if len(raw) > limits.max_value_bytes and len(json.dumps(args)) > limits.max_value_bytes:
            self._refuse(
                name,
                None,
                LimitFailure(
                    limit=Limit.VALUE_SIZE,
                    message=f"the arguments of ctx.{name} exceed {limits.max_value_bytes} "
                    "characters of JSON",
                    line=site.line,
                    column=site.column,
                ),
                site.line,
            )
        if json_depth(args, limits.max_value_depth + 1, text=raw) > limits.max_value_depth + 1:
            self._refuse(name, None, self._too_deep(f"the arguments of ctx.{name}"), site.line)
        try:
            if operation is None:
                arguments: JsonValue = topic_arguments(
                    name,
                    args,
                    subscribed=self._request.subscribed_topics,
                    publishable=self._request.publish_topics,
                    policy=self._request.policy,
                )
            else:
                arguments = connector_arguments(
                    name, operation, args, validate=self._allowed.is_mutation(name)
                )
        except KeepError as exc:
            self._refuse(
                name,
                args,
                outcome_for_host_error(exc, name, line=site.line, column=site.column),
                site.line,
            )
        if operation is not None and self._allowed.is_mutation(name):
            connector, _, op_name = name.partition(".")
            assert isinstance(arguments, dict)
            self._mutation = MutationRequested(
                connector=connector,
                operation=op_name,
                arguments=arguments,
                line=site.line,
                column=site.column,
            )
            return
        self._perform(request_id, name, arguments, site)

    def _perform(self, request_id: int, name: str, arguments: JsonValue, site: _Site) -> None:
        started = time.perf_counter()
        try:
            result = self._host.call(name, arguments)
        except Exception as exc:
            duration = time.perf_counter() - started
            outcome = outcome_for_host_error(exc, name, line=site.line, column=site.column)
            error = getattr(outcome, "message", str(exc))
            self._calls.append(
                HostCall(
                    name=name,
                    arguments=arguments,
                    status="failed",
                    error=error,
                    duration_s=duration,
                    line=site.line,
                )
            )
            _finish(outcome)
        duration = time.perf_counter() - started
        self._calls.append(
            HostCall.model_construct(
                name=name,
                arguments=arguments,
                status="ok",
                result=result,
                error=None,
                duration_s=duration,
                line=None,
            )
        )
        try:
            payload = _ENCODER.encode(result)
        except (TypeError, ValueError, RecursionError) as exc:
            _finish(InternalFailure(message=f"ctx.{name} returned a value that is not JSON: {exc}"))
        if len(payload) > self._limits.max_value_bytes:
            _finish(
                LimitFailure(
                    limit=Limit.VALUE_SIZE,
                    message=f"the result of ctx.{name} is larger than "
                    f"{self._limits.max_value_bytes} characters of JSON",
                    line=site.line,
                    column=site.column,
                )
            )
        depth = json_depth(result, self._limits.max_value_depth, text=payload)
        if depth > self._limits.max_value_depth:
            _finish(self._too_deep(f"the result of ctx.{name}"))
        status = self._enter(self._dispatch, "settle", request_id, payload)
        if status:
            _finish(
                InternalFailure(message=f"the sandbox could not settle ctx.{name}: {status[:300]}")
            )


def run_phase(request: PhaseRequest, host: HostInterface) -> PhaseResult:
    """Run one handler phase in a fresh context in this process and return how it ended.

    Never raises: every failure is an outcome. Bounded by the request's policy
    limits on every path into the engine; an engine crash (SIGSEGV) would take the
    process down, which `keep_sdk.sandbox.ProcessIsolation` survives.
    """
    return PhaseRun(request, host).run()
