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
import re
import time
from functools import lru_cache
from importlib import resources
from typing import Any, Final, NoReturn

import quickjs
from pydantic import JsonValue

from keep_sdk.contract import codec
from keep_sdk.contract.admission import PUBLISH_RESERVE
from keep_sdk.contract.codec import BoundaryError
from keep_sdk.contract.manifest import Manifest
from keep_sdk.errors import KeepError
from keep_sdk.model import HandlerPhase, HostPolicy, trusted
from keep_sdk.sandbox._arguments import connector_arguments, topic_arguments
from keep_sdk.sandbox._failures import (
    PRELUDE_PAD,
    outcome_for_engine_exception,
    outcome_for_host_error,
    outcome_for_thrown,
    script_location,
)
from keep_sdk.sandbox._host import HostInterface
from keep_sdk.sandbox._shadowing import keep_declared_at
from keep_sdk.sandbox._sites import ApprovedSites
from keep_sdk.sandbox.bytecode import ModuleLoader, PreludeLoader
from keep_sdk.sandbox.capabilities import Capabilities
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
from keep_sdk.sandbox.realm import Realm, RealmKey, realm_key, realms
from keep_sdk.sandbox.returns import Marked
from keep_sdk.sandbox.setup import build_setup, config_text, phase_fields, setup_for
from keep_sdk.sandbox.stack import safe_stack_bytes

__all__ = ["ARGUMENT_ENVELOPE", "PUBLISH_RESERVE", "PhaseRun", "prelude_source", "run_phase"]

_STATE_PHASES: Final = (HandlerPhase.PRODUCER, HandlerPhase.NEXT)
_LINE_ENVELOPE: Final = 16_384
_PARSE_DEPTH: Final = 512
_CALL_NAME: Final = re.compile(r'\[\d+,("[^"\\]*(?:\\.[^"\\]*)*")')
_ROOTS: Final = {
    "peek": ("topic", "options"),
    "getByIds": ("topic", "ids"),
    "publish": ("topic", "event"),
}

ARGUMENT_ENVELOPE: Final = 4_096
"""Bytes `prepared` and `mutationResult` may exceed `max_value_bytes` by: the fields the
host adds around what ``prepare`` and the connector returned."""


_NO_WORKFLOW: Final = "the script never called Keep.workflow("


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


@lru_cache(maxsize=1)
def _module_loader() -> ModuleLoader:
    return ModuleLoader()


@lru_cache(maxsize=1)
def _fresh_boot_bytes() -> int:
    """Bytes a fresh context holds once the prelude has booted in it (our own code, which
    ends on its own, so no deadline is needed)."""
    context = quickjs.Context()
    boot = _prelude_loader().load(context, lambda function, *args: function(*args))
    setup = build_setup("", Manifest(connectors=[]), HostPolicy(), HandlerPhase.PRODUCER)
    boot(config_text(setup.config_head, log_budget=0, determinism=None))
    return int(context.memory()["malloc_size"])


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


class _Dirty(Exception):
    """The realm cannot run this phase (an earlier phase changed the global object, or
    this phase's module left no way to hand it over); it is closed and the phase runs
    from the start in a fresh context. Nothing has left the sandbox when it is raised."""


class _Finished(Exception):
    def __init__(self, outcome: Outcome) -> None:
        super().__init__(outcome.kind)
        self.outcome = outcome


def _finish(outcome: Outcome) -> NoReturn:
    raise _Finished(outcome)


def _explain_shadowed_keep(outcome: Outcome, source: str) -> Outcome:
    """`outcome`, or, when the script never called the global `Keep.workflow` because it
    declares a `Keep` of its own, a failure located at that declaration saying so."""
    if not isinstance(outcome, LogicFailure) or _NO_WORKFLOW not in outcome.message:
        return outcome
    line = keep_declared_at(source)
    if line is None:
        return outcome
    message = (
        f"the script declares its own `Keep` at line {line}, which hides the global `Keep` the "
        "sandbox provides, so the global Keep.workflow(...) was never called; remove or "
        "rename that declaration and `export default Keep.workflow({...})`"
    )
    return LogicFailure(message=message, line=line, column=1)


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
        if exposed is None:
            self._setup = setup_for(request.source, request.manifest, request.policy, request.phase)
        else:
            self._setup = build_setup(
                request.source, request.manifest, request.policy, request.phase, exposed=exposed
            )
        self._allowed = self._setup.allowed
        self._sites = (
            None
            if request.unchecked_sites
            else ApprovedSites(request.call_sites, self._setup.marked)
        )
        self._console: list[ConsoleLine] = []
        self._log_bytes = 0
        self._log_budget = max(0, self._limits.max_log_bytes - request.log_bytes_before)
        self._publishes = 0
        self._published_bytes = 0
        self._trace_bytes = 0
        self._trace_truncated = False
        self._host_s = 0.0
        self._boundary_s = 0.0
        self._thread_started = 0.0
        self._handler_at: tuple[int | None, int | None] = (None, None)
        self._returned_at: tuple[int, int] | None = None
        self._marked = Marked(text=request.source)
        self._calls: list[HostCall] = []
        self._call_count = 0
        self._jobs = 0
        self._js_used = 0.0
        self._wall_at = 0.0
        self._mutation: MutationRequested | None = None
        self._can_mutate = self._setup.can_mutate
        self._guard: InterruptGuard | None = None
        self._dispatch: Any = None
        self._realm: Realm | None = None
        self._clean = True

    def run(self) -> PhaseResult:
        """Run the phase to its outcome. Never raises."""
        started = time.monotonic()
        self._thread_started = time.thread_time()
        self._wall_at = started + self._limits.wall_time_s
        key = realm_key(self._request)
        realm = realms.take(key)
        reusable = realm is None and realms.wanted(key)
        try:
            try:
                outcome = self._in_context(key, realm, reusable)
            except _Dirty:
                self._js_used = 0.0
                outcome = self._in_context(key, None, False)
        except _Finished as finished:
            outcome = finished.outcome
        except KeepError as exc:
            self._clean = False
            outcome = InternalFailure(message=str(exc))
        except Exception as exc:
            self._clean = False
            outcome = InternalFailure(message=f"sandbox failure: {type(exc).__name__}: {exc}")
        finally:
            self._release()
        performed = self._mutation is not None and outcome is self._mutation
        outcome = _explain_shadowed_keep(self._as_written(outcome), self._request.source)
        if self._mutation is not None:
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
        trace = trusted(
            Trace,
            {
                "console": self._console,
                "calls": self._calls,
                "jobs": self._jobs,
                "cpu_time_s": self._js_used,
                "wall_time_s": time.monotonic() - started,
                "host_time_s": self._host_s,
                "boundary_time_s": self._boundary_s,
                "truncated": self._trace_truncated,
                "log_bytes": self._log_bytes,
            },
        )
        return trusted(PhaseResult, {"outcome": outcome, "trace": trace, "isolation": "in_process"})

    def _in_context(self, key: RealmKey, realm: Realm | None, reusable: bool) -> Outcome:
        """The phase run in `realm`, or in a fresh context (built as a realm when
        `reusable`)."""
        if realm is None:
            context: Any = quickjs.Context()
            self._guard = InterruptGuard(context)
            if reusable:
                realm = Realm(key=key, context=context, guard=self._guard, dispatch=None)
        else:
            context = realm.context
            self._guard = realm.guard
        self._realm = realm
        return self._drive(context)

    def _drop_realm(self) -> NoReturn:
        assert self._realm is not None
        self._realm.close()
        self._realm = None
        self._dispatch = None
        raise _Dirty

    def _release(self) -> None:
        """Give a realm that ran cleanly and is pristine back to the pool; close every
        other context."""
        realm, self._realm = self._realm, None
        if realm is None:
            if self._guard is not None:
                self._guard.close()
        elif self._clean and realm.dispatch is not None and self._pristine(realm):
            realms.give(realm)
        else:
            realm.close()
        self._dispatch = None

    def _pristine(self, realm: Realm) -> bool:
        """Whether the phase left the realm's global object as the realm had it; a realm
        it changed is not built again for this workflow version. The check runs only the
        prelude's own functions: nothing of the script can run in it."""
        try:
            clean = str(self._enter(realm.dispatch, "check")) == "clean"
        except _Finished:
            return False
        if not clean:
            realms.spoil(realm.key)
        return clean

    def _open(self, context: Any, fields: str, stack_bytes: int) -> Any:
        """The prelude's ``dispatch`` for this phase (whose own configuration fields are
        `fields`): a kept realm's, moved on to a new phase, or a new context's, booted
        (after the decoy module when it is a realm)."""
        realm = self._realm
        if realm is not None and realm.dispatch is not None:
            if self._enter(realm.dispatch, "next", self._setup.config_static, fields) != "":
                self._drop_realm()
            self._match_fresh_memory(realm)
            return realm.dispatch
        context.set_memory_limit(self._limits.memory_bytes)
        context.set_max_stack_size(stack_bytes)
        if realm is not None:
            self._enter(context.module, "export {};")
            while self._enter(context.execute_pending_job):
                pass
        boot = _prelude_loader().load(context, self._enter)
        dispatch = self._enter(boot, f"{self._setup.config_head},{fields[1:]}")
        if realm is not None:
            realm.dispatch = dispatch
            self._match_fresh_memory(realm)
        return dispatch

    def _match_fresh_memory(self, realm: Realm) -> None:
        """Give the script in `realm` the memory it would have in a fresh context: the
        limit is raised by what the realm holds beyond a freshly booted context."""
        extra = max(0, realm.used() - _fresh_boot_bytes())
        realm.context.set_memory_limit(self._limits.memory_bytes + extra)

    def _as_written(self, outcome: Outcome) -> Outcome:
        """`outcome` with its column in the script as written (returns are marked)."""
        line, column = getattr(outcome, "line", None), getattr(outcome, "column", None)
        if line is None or column is None:
            return outcome
        written = self._marked.original_column(line, column)
        if written == column:
            return outcome
        return outcome.model_copy(update={"column": written})

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
            self._clean = False
            _finish(self._entry_failure(exc))
        finally:
            self._js_used += time.monotonic() - started

    def _limit_failure(self, limit: Limit) -> LimitFailure:
        if limit is Limit.CPU_TIME:
            cpu = time.thread_time() - self._thread_started
            text = (
                f"the script ran for more than {self._limits.cpu_time_s} s of JS time (time "
                f"inside the engine; the thread used {cpu:.2f} s of CPU in this phase): look "
                "for a loop that never ends or work that grows with its input"
            )
        else:
            text = (
                f"the phase ran longer than its wall-clock limit of {self._limits.wall_time_s} s: "
                f"the script ran {self._js_used:.2f} s, ctx calls took {self._host_s:.2f} s and "
                f"checking values at the sandbox boundary {self._boundary_s:.2f} s"
            )
            if self._host_s > self._js_used:
                text += "; the time went to ctx calls: make fewer or smaller ones"
        return LimitFailure(limit=limit, message=text)

    def _entry_failure(self, exc: Exception) -> Outcome:
        assert self._guard is not None
        if self._guard.fired is not None:
            fired = Limit.CPU_TIME if self._guard.fired == CPU_TIME else Limit.WALL_TIME
            return self._limit_failure(fired)
        return outcome_for_engine_exception(exc, memory_bytes=self._limits.memory_bytes)

    def _drive(self, context: Any) -> Outcome:
        request, setup = self._request, self._setup
        if setup.problem is not None:
            return LogicFailure(message=setup.problem)
        texts = []
        for root, value, cap in self._handler_values():
            try:
                texts.append(
                    codec.encode(
                        value, root=root, max_bytes=cap, max_depth=self._limits.max_value_depth
                    )
                )
            except BoundaryError as exc:
                return self._boundary_failure(
                    exc,
                    f"the {root} passed to {request.phase.value} of {request.handler!r} cannot "
                    "enter the sandbox (an earlier run stored it): ",
                    limit=Limit.STATE_SIZE if root == "state" else Limit.VALUE_SIZE,
                )
        arguments = "[" + ",".join(texts) + "]"
        stack_bytes = safe_stack_bytes(self._limits.stack_bytes)
        fields = phase_fields(
            log_budget=self._log_budget,
            determinism=request.determinism,
            reusable=self._realm is not None,
        )
        self._dispatch = self._open(context, fields, stack_bytes)
        self._marked = setup.marked
        module = _module_loader().load(
            context,
            self._marked.text,
            self._enter,
            memory_bytes=self._limits.memory_bytes,
            stack_bytes=stack_bytes,
        )
        if module is None and self._realm is not None:
            self._drop_realm()
        status = self._enter(
            self._dispatch, "run", module, request.handler, request.phase.value, arguments
        )
        if status:
            return self._start_failure(status)
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

    def _start_failure(self, status: str) -> Outcome:
        """The outcome of a ``run`` the prelude could not start. What it catches there is
        the engine running out of a resource the script used up (``error`` alone: not even
        the description could be built); anything else is the sandbox's own failure."""
        description: Any = {"value": "null"} if status == "error" else None
        if status.startswith("error:"):
            try:
                description = json.loads(status[len("error:") :])
            except ValueError:
                description = None
        if isinstance(description, dict):
            outcome = outcome_for_thrown(description, memory_bytes=self._limits.memory_bytes)
            if isinstance(outcome, LimitFailure):
                return outcome
        return InternalFailure(
            message=f"the sandbox prelude refused to start: {codec.cut(status, 300)}"
        )

    def _handler_values(self) -> list[tuple[str, JsonValue, int]]:
        request, limits = self._request, self._limits
        values = request.handler_arguments()
        if request.phase in (HandlerPhase.PRODUCER, HandlerPhase.PREPARE):
            return [("state", value, limits.max_state_bytes) for value in values]
        cap = limits.max_value_bytes + ARGUMENT_ENVELOPE
        roots = ("prepared", "mutationResult")
        return [(root, value, cap) for root, value in zip(roots, values, strict=False)]

    def _boundary_failure(
        self,
        exc: BoundaryError,
        prefix: str,
        *,
        limit: Limit = Limit.VALUE_SIZE,
        line: int | None = None,
        column: int | None = None,
    ) -> Outcome:
        where = {"line": line, "column": column}
        if exc.rule == "depth":
            return LimitFailure(limit=Limit.VALUE_DEPTH, message=prefix + exc.message, **where)
        if exc.rule == "size":
            return LimitFailure(limit=limit, message=prefix + exc.message, **where)
        return LogicFailure(message=prefix + exc.message, **where)

    def _line_failure(self, line: str, exc: BoundaryError) -> Outcome:
        call = _CALL_NAME.match(line)
        if call is not None:
            name = str(json.loads(call[1]))
            stack_at = line.rfind(',"')
            stack = line[stack_at + 1 : -1] if stack_at > call.end() else '""'
            try:
                where = script_location(str(json.loads(stack)))
            except ValueError:
                where = (None, None)
            return self._boundary_failure(
                exc, f"ctx.{name}: the arguments: ", line=where[0], column=where[1]
            )
        phase = self._request.phase
        limit = Limit.STATE_SIZE if phase in _STATE_PHASES else Limit.VALUE_SIZE
        prefix = f"{phase.value} of {self._request.handler!r} returned a value that cannot leave "
        line_at, column_at = self._returned_at or self._handler_at
        return self._boundary_failure(
            exc, prefix + "the sandbox: ", limit=limit, line=line_at, column=column_at
        )

    def _decode(self, line: str) -> list[Any]:
        """One outbox line, checked on its text before it is parsed.

        A line nested deeper than the limit but within `_PARSE_DEPTH` is parsed so that
        the check of its value can name the path that is too deep.
        """
        limits = self._limits
        started = time.perf_counter()
        try:
            try:
                codec.scan(
                    line,
                    what="the value",
                    max_bytes=max(limits.max_value_bytes, limits.max_state_bytes),
                    max_depth=limits.max_value_depth + 1,
                    envelope=_LINE_ENVELOPE,
                )
            except BoundaryError as exc:
                if exc.rule != "depth" or codec.depth_exceeds(line, _PARSE_DEPTH):
                    raise
            record = codec.loads(line, what="the value")
        except BoundaryError as exc:
            _finish(self._line_failure(line, exc))
        finally:
            self._boundary_s += time.perf_counter() - started
        if not isinstance(record, list) or not record:
            _finish(InternalFailure(message="the sandbox prelude broke its protocol"))
        return record

    def _process(self, text: str) -> None:
        if not text:
            return
        lines = [line for line in text.split("\n") if line]
        mutation_at = None
        if self._mutation is None and self._can_mutate:
            for index, line in enumerate(lines):
                call = _CALL_NAME.match(line)
                if call is not None and self._allowed.is_mutation(str(json.loads(call[1]))):
                    mutation_at = index
                    break
        for index, line in enumerate(lines):
            record = self._decode(line)
            head = record[0]
            if head == "log":
                self._log(record[1], record[2])
            elif head == "!":
                at, column = script_location(str(record[3]) if len(record) > 3 else "")
                limit = Limit(record[1])
                if limit is Limit.LOG_BYTES:
                    _finish(self._log_failure(at, column))
                _finish(LimitFailure(limit=limit, message=str(record[2]), line=at, column=column))
            elif head == "ret":
                line_at, column_at = record[1], record[2]
                if isinstance(line_at, int) and isinstance(column_at, int):
                    self._returned_at = (line_at, self._marked.marked_column(line_at, column_at))
            elif head == "site":
                line_at, column_at = record[1], record[2]
                if isinstance(line_at, int) and isinstance(column_at, int):
                    self._handler_at = (line_at, column_at)
            elif head == "late":
                self._drop([0, record[1], None, record[2]], "called after the mutation call")
            elif head == "done":
                if self._mutation is not None:
                    _finish(self._mutation)
                self._complete(record)
            elif head == "fail":
                self._fail(record[1])
            elif self._mutation is not None:
                self._drop(record, "called after the mutation call")
            elif mutation_at is not None and index < mutation_at:
                self._drop(record, "not awaited before the mutation call, which ends the phase")
            else:
                self._call(record)

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
        text = codec.clean_text(str(text))
        size = len(text.encode("utf-8"))
        if self._log_bytes + size > self._log_budget:
            _finish(self._log_failure(None, None))
        self._log_bytes += size
        self._console.append(ConsoleLine(level=level, text=text))

    def _log_failure(self, line: int | None, column: int | None) -> LimitFailure:
        before = self._request.log_bytes_before
        earlier = f" (earlier phases of this run logged {before})" if before else ""
        message = (
            f"console output in this run is over {self._limits.max_log_bytes} bytes of UTF-8 "
            f"(max_log_bytes){earlier}; log counts, ids or summaries instead of whole values"
        )
        return LimitFailure(limit=Limit.LOG_BYTES, message=message, line=line, column=column)

    def _traced(self, *values: JsonValue, size: int | None = None) -> bool:
        """Whether `values` (of `size` bytes, measured if not given) still fit in the trace
        budget; they are charged when they do."""
        if self._trace_truncated:
            return False
        if size is None:
            size = sum(codec.measure(value) for value in values)
        if self._trace_bytes + size > self._limits.max_trace_bytes:
            self._trace_truncated = True
            return False
        self._trace_bytes += size
        return True

    def _drop(self, record: list[Any], reason: str) -> None:
        line, _ = script_location(str(record[3]))
        args = record[2]
        try:
            codec.check(args, root="arguments", max_bytes=2**62, max_depth=2**30)
        except BoundaryError:
            args = None
        if not self._traced(args):
            args = None
        self._calls.append(
            HostCall(name=str(record[1]), arguments=args, status="dropped", error=reason, line=line)
        )

    def _complete(self, record: list[Any]) -> None:
        returned = len(record) > 1
        value = record[1] if returned else None
        phase = self._request.phase
        if phase in _STATE_PHASES:
            limit, cap, root = Limit.STATE_SIZE, self._limits.max_state_bytes, "state"
        else:
            limit, cap, root = Limit.VALUE_SIZE, self._limits.max_value_bytes, "result"
        started = time.perf_counter()
        try:
            codec.check(value, root=root, max_bytes=cap, max_depth=self._limits.max_value_depth)
        except BoundaryError as exc:
            prefix = (
                f"{phase.value} of {self._request.handler!r} returned a value that cannot "
                "leave the sandbox: "
            )
            line_at, column_at = self._returned_at or self._handler_at
            _finish(
                self._boundary_failure(exc, prefix, limit=limit, line=line_at, column=column_at)
            )
        finally:
            self._boundary_s += time.perf_counter() - started
        completed = {"line": None, "column": None, "kind": "completed"}
        _finish(trusted(Completed, {**completed, "result": value, "returned": returned}))

    def _refuse(self, name: str, args: JsonValue, outcome: Outcome, line: int | None) -> NoReturn:
        error = getattr(outcome, "message", outcome.kind)
        if not self._traced(args):
            args = None
        self._calls.append(
            HostCall(name=name, arguments=args, status="refused", error=error, line=line)
        )
        _finish(outcome)

    def _check_site(self, name: str, stack: str, site: _Site) -> None:
        """Refuse, before anything is sent, a call not made from an approved site."""
        assert self._sites is not None
        request = self._request
        refusal = self._sites.refusal(name, stack, f"{request.phase.value} of {request.handler!r}")
        if refusal is not None:
            outcome = LogicFailure(
                message=refusal, error_name="PhaseViolation", line=site.line, column=site.column
            )
            self._refuse(name, None, outcome, site.line)

    def _check_arguments(self, name: str, args: Any, site: _Site) -> int:
        """The canonical size of a call's argument list, after the boundary checks."""
        limits = self._limits
        cap = limits.max_value_bytes
        if name == "publish":
            cap -= PUBLISH_RESERVE
        started = time.perf_counter()
        try:
            return codec.check(
                args,
                root="arguments",
                roots=_ROOTS.get(name, ("argument",)),
                max_bytes=cap,
                max_depth=limits.max_value_depth,
            )
        except BoundaryError as exc:
            prefix = f"ctx.{name}: "
            if exc.rule == "size" and name == "publish":
                prefix += (
                    f"a published event may use {cap} bytes of JSON ({limits.max_value_bytes} "
                    f"less {PUBLISH_RESERVE} for what the host adds when it is read back): "
                )
            outcome = self._boundary_failure(exc, prefix, line=site.line, column=site.column)
            self._refuse(name, None, outcome, site.line)
        finally:
            self._boundary_s += time.perf_counter() - started

    def _count_publish(self, size: int, site: _Site) -> None:
        limits = self._limits
        self._publishes += 1
        self._published_bytes += size
        where = {"line": site.line, "column": site.column}
        if self._publishes > limits.max_publishes:
            outcome = LimitFailure(
                limit=Limit.PUBLISHES,
                message=f"more than {limits.max_publishes} ctx.publish calls in one run "
                "(max_publishes); publish fewer, larger events or spread the work over runs",
                **where,
            )
            self._refuse("publish", None, outcome, site.line)
        if self._published_bytes > limits.max_published_bytes:
            outcome = LimitFailure(
                limit=Limit.PUBLISHED_BYTES,
                message=f"the events published in this run exceed {limits.max_published_bytes} "
                "bytes of JSON in total (max_published_bytes); publish ids or summaries "
                "instead of whole records",
                **where,
            )
            self._refuse("publish", None, outcome, site.line)

    def _call(self, record: list[Any]) -> None:
        if len(record) != 4 or not isinstance(record[2], list):
            _finish(InternalFailure(message="the sandbox prelude broke its protocol"))
        request_id, name, args, stack = record
        name, site = str(name), _Site(str(stack))
        limits = self._limits
        try:
            operation = self._allowed.check(name)
        except KeepError as exc:
            self._refuse(
                name,
                None,
                outcome_for_host_error(exc, name, line=site.line, column=site.column),
                site.line,
            )
        if self._sites is not None:
            self._check_site(name, str(stack), site)
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
        size = self._check_arguments(name, args, site)
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
        if name == "publish":
            self._count_publish(size, site)
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
        self._perform(request_id, name, arguments, site, size)

    def _perform(
        self, request_id: int, name: str, arguments: JsonValue, site: _Site, size: int
    ) -> None:
        started = time.perf_counter()
        try:
            result = self._host.call(name, arguments)
        except Exception as exc:
            duration = time.perf_counter() - started
            self._host_s += duration
            outcome = outcome_for_host_error(exc, name, line=site.line, column=site.column)
            error = getattr(outcome, "message", str(exc))
            self._calls.append(
                HostCall(
                    name=name,
                    arguments=arguments if self._traced(arguments) else None,
                    status="failed",
                    error=error,
                    duration_s=duration,
                    line=site.line,
                )
            )
            _finish(outcome)
        checked = time.perf_counter()
        duration = checked - started
        self._host_s += duration
        try:
            payload, result_size = codec.encode_sized(
                result,
                root="result",
                max_bytes=self._limits.max_value_bytes,
                max_depth=self._limits.max_value_depth,
            )
        except BoundaryError as exc:
            if exc.is_limit:
                prefix = f"the result of ctx.{name}: "
                outcome = self._boundary_failure(exc, prefix, line=site.line, column=site.column)
            else:
                outcome = InternalFailure(
                    message=f"ctx.{name} returned a value the sandbox cannot pass to the "
                    f"script: {exc.message}"
                )
            self._refuse(name, arguments, outcome, site.line)
        finally:
            self._boundary_s += time.perf_counter() - checked
        kept = self._traced(arguments, result, size=size + result_size)
        self._calls.append(
            trusted(
                HostCall,
                {
                    "name": name,
                    "arguments": arguments if kept else None,
                    "status": "ok",
                    "result": result if kept else None,
                    "error": None,
                    "duration_s": duration,
                    "line": None,
                },
            )
        )
        status = self._enter(self._dispatch, "settle", request_id, payload)
        if status:
            _finish(
                InternalFailure(
                    message=f"the sandbox could not settle ctx.{name}: {codec.cut(status, 300)}"
                )
            )


def run_phase(request: PhaseRequest, host: HostInterface) -> PhaseResult:
    """Run one handler phase in a fresh context in this process and return how it ended.

    Never raises: every failure is an outcome. Bounded by the request's policy
    limits on every path into the engine; an engine crash (SIGSEGV) would take the
    process down, which `keep_sdk.sandbox.ProcessIsolation` survives.
    """
    return PhaseRun(request, host).run()
