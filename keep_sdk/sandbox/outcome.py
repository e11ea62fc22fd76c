"""What goes into one sandboxed phase and what comes out of it.

`PhaseRequest` is everything the sandbox needs to run one handler phase; it is a
pydantic model so that it crosses the pipe to a worker process unchanged.
`PhaseResult` carries exactly one `Outcome` and a `Trace` of what the script did.
"""

from __future__ import annotations

import datetime as dt
from enum import StrEnum
from typing import Annotated, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, JsonValue

from keep_sdk.contract.codec import clean_text, cut
from keep_sdk.contract.manifest import Manifest
from keep_sdk.contract.workflow import CallSite
from keep_sdk.errors import (
    InternalError,
    KeepError,
    LimitExceeded,
    LogicError,
    PermissionDenied,
    PreconditionFailed,
    ScriptLocation,
    TransientError,
    UncertainOutcome,
)
from keep_sdk.model import FailureKind, HandlerPhase, HostPolicy

__all__ = [
    "MESSAGE_LIMIT",
    "CallFailed",
    "Completed",
    "ConsoleLine",
    "Determinism",
    "HostCall",
    "InternalFailure",
    "Limit",
    "LimitFailure",
    "LogicFailure",
    "Message",
    "MutationRequested",
    "Outcome",
    "PhaseRequest",
    "PhaseResult",
    "Trace",
]


MESSAGE_LIMIT = 2_000
"""Code points kept of any message or error text an outcome or trace carries."""


def _bounded(text: str) -> str:
    return cut(clean_text(text), MESSAGE_LIMIT)


Message = Annotated[str, AfterValidator(_bounded)]
"""Text for people: lone surrogates replaced by U+FFFD, cut at `MESSAGE_LIMIT` code points."""

_LINE_LIMIT = 8_192


def _line(text: str) -> str:
    return cut(clean_text(text), _LINE_LIMIT + 20)


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class Limit(StrEnum):
    """The sandbox limits a phase can exceed (fields of `keep_sdk.model.SandboxLimits`)."""

    CPU_TIME = "cpu_time"
    WALL_TIME = "wall_time"
    MEMORY = "memory"
    STACK = "stack"
    JOBS = "jobs"
    HOST_CALLS = "host_calls"
    VALUE_SIZE = "value_size"
    VALUE_DEPTH = "value_depth"
    STATE_SIZE = "state_size"
    PUBLISHES = "publishes"
    PUBLISHED_BYTES = "published_bytes"
    LOG_BYTES = "log_bytes"


class Determinism(_Frozen):
    """Replay mode: `Date.now()`/`new Date()` return `clock`, `Math.random` is seeded.

    ``performance.now()`` returns 0. The clock does not advance during the phase.
    """

    clock: dt.datetime = Field(description="The fixed 'now'; a naive value is taken as UTC.")
    seed: int = Field(default=0, ge=0, lt=2**32, description="Seed of Math.random.")

    @property
    def clock_ms(self) -> int:
        """The clock as milliseconds since the Unix epoch (what ``Date.now()`` returns)."""
        clock = self.clock if self.clock.tzinfo else self.clock.replace(tzinfo=dt.UTC)
        return int(clock.timestamp() * 1000)


class PhaseRequest(_Frozen):
    """One handler phase to run: the script, which handler, its arguments and its scope.

    The phase decides the arguments the handler receives after ``ctx``:
    producer ``(ctx, state)``, prepare ``(ctx, state)``, mutate ``(ctx, prepared)``,
    next ``(ctx, prepared, mutationResult)``. A handler that has never committed a
    state (`has_state` False) gets ``state`` undefined, as the specification says
    (06a), so ``(ctx, state = {})`` defaults work.

    The host performs a ctx call only from one of `call_sites` (the validator's approved
    sites of this phase); a request without them performs none, unless `unchecked_sites`
    (a test of the sandbox alone) turns the check off.
    """

    source: str = Field(description="The workflow module: `export default Keep.workflow({...})`.")
    handler: str = Field(min_length=1, description="Producer name, or consumer name.")
    phase: HandlerPhase
    state: JsonValue = None
    has_state: bool = Field(
        default=True, description="False on a handler's first run: `state` is then undefined."
    )
    prepared: JsonValue = None
    mutation_result: JsonValue = None
    manifest: Manifest = Field(default_factory=Manifest)
    subscribed_topics: tuple[str, ...] = Field(
        default=(), description="Topics `ctx.peek` and `ctx.getByIds` may read (prepare)."
    )
    publish_topics: tuple[str, ...] = Field(
        default=(), description="Topics `ctx.publish` may write (producer, next)."
    )
    policy: HostPolicy = Field(default_factory=HostPolicy)
    determinism: Determinism | None = None
    log_bytes_before: int = Field(
        default=0,
        ge=0,
        description="UTF-8 bytes of console output earlier phases of the same run captured; "
        "they count against `max_log_bytes`.",
    )
    filename: str | None = Field(default=None, description="Shown in error locations.")
    call_sites: tuple[CallSite, ...] | None = Field(
        default=None,
        description="The ctx call sites the validator approved for this phase (from the "
        "workflow manifest frozen with the version); the host refuses a ctx call from any "
        "other site. None (not given) approves no ctx call: the phase fails closed at its "
        "first one.",
    )
    unchecked_sites: bool = Field(
        default=False,
        description="Tests of the sandbox alone only: perform ctx calls without checking "
        "their call site. The runtime and replay never set it.",
    )

    def handler_arguments(self) -> list[JsonValue]:
        """The JSON arguments passed to the handler after ``ctx``."""
        if self.phase in (HandlerPhase.PRODUCER, HandlerPhase.PREPARE):
            return [self.state] if self.has_state else []
        if self.phase is HandlerPhase.MUTATE:
            return [self.prepared]
        return [self.prepared, self.mutation_result]


class ConsoleLine(_Frozen):
    """One captured ``console.*`` call."""

    level: Literal["log", "info", "debug", "warn", "error"]
    text: Annotated[str, AfterValidator(_line)]


class HostCall(_Frozen):
    """One ctx call the script made, as the host saw it.

    status: ``ok`` (performed, result returned to the script), ``failed`` (the host
    interface raised; `error` says what), ``refused`` (the sandbox refused it: phase,
    topic, arguments or a limit), ``requested`` (the terminal mutation, handed to the
    runtime), ``dropped`` (queued after the phase had already ended).
    """

    name: str
    arguments: JsonValue = None
    status: Literal["ok", "failed", "refused", "requested", "dropped"]
    result: JsonValue = None
    error: Message | None = None
    duration_s: float = 0.0
    line: int | None = None


class Trace(_Frozen):
    """What the script did during the phase."""

    console: list[ConsoleLine] = Field(default_factory=list)
    calls: list[HostCall] = Field(default_factory=list)
    jobs: int = Field(default=0, description="Promise jobs executed.")
    cpu_time_s: float = Field(
        default=0.0, description="JS time: wall-clock time spent inside the engine."
    )
    wall_time_s: float = 0.0
    host_time_s: float = Field(default=0.0, description="Time spent performing ctx calls.")
    boundary_time_s: float = Field(
        default=0.0, description="Time spent checking and decoding values at the boundary."
    )
    truncated: bool = Field(
        default=False,
        description="Arguments and results of later calls were left out (max_trace_bytes).",
    )
    log_bytes: int = Field(
        default=0, description="UTF-8 bytes of the console lines captured in this phase."
    )


class _Located(_Frozen):
    line: int | None = Field(default=None, description="1-based line in the script.")
    column: int | None = None

    def _location(self, request: PhaseRequest | None) -> ScriptLocation | None:
        if self.line is None:
            return None
        return ScriptLocation(
            line=self.line,
            column=self.column,
            file=request.filename if request else None,
            handler=request.handler if request else None,
            phase=request.phase.value if request else None,
        )


class Completed(_Located):
    """The handler settled with a JSON value (`returned` is False for ``undefined``)."""

    kind: Literal["completed"] = "completed"
    result: JsonValue = None
    returned: bool = True

    def to_error(self, request: PhaseRequest | None = None) -> KeepError | None:
        """None: completing is not an error."""
        return None


class MutationRequested(_Located):
    """`mutate` called a mutation; its arguments passed the operation's schema.

    The phase is over for good: the sandbox never re-entered the script after the
    call. The runtime performs the mutation.
    """

    kind: Literal["mutation_requested"] = "mutation_requested"
    connector: str
    operation: str
    arguments: dict[str, JsonValue]

    def to_error(self, request: PhaseRequest | None = None) -> KeepError | None:
        """None: requesting a mutation is not an error."""
        return None


class LogicFailure(_Located):
    """The script failed: it threw, broke a rule of its phase, or misused a ctx call."""

    kind: Literal["logic_error"] = "logic_error"
    message: Message
    error_name: str | None = Field(default=None, description="JS error class, if any.")

    def to_error(self, request: PhaseRequest | None = None) -> KeepError | None:
        """The matching `LogicError`, located in the script when the line is known."""
        return LogicError(self.message, location=self._location(request))


class LimitFailure(_Located):
    """A sandbox limit was exceeded; the phase was stopped."""

    kind: Literal["limit_exceeded"] = "limit_exceeded"
    limit: Limit
    message: Message

    def to_error(self, request: PhaseRequest | None = None) -> KeepError | None:
        """The matching `LimitExceeded`."""
        return LimitExceeded(self.message, limit=self.limit.value, location=self._location(request))


class CallFailed(_Located):
    """A ctx call failed in the host with a classified connector error.

    The failure is the host's to route (retry, escalate…); the script never sees it.
    """

    kind: Literal["call_failed"] = "call_failed"
    operation: str
    failure: FailureKind
    message: Message
    retry_after: float | None = None
    permission: str | None = Field(default=None, description="The missing permission, if known.")

    def to_error(self, request: PhaseRequest | None = None) -> KeepError | None:
        """The connector error class that matches `failure`."""
        if self.failure is FailureKind.TRANSIENT:
            return TransientError(self.message, retry_after=self.retry_after)
        if self.failure is FailureKind.PERMISSION:
            return PermissionDenied(self.message, permission=self.permission)
        if self.failure is FailureKind.PRECONDITION:
            return PreconditionFailed(self.message)
        if self.failure is FailureKind.INDETERMINATE:
            return UncertainOutcome(self.message)
        return InternalError(self.message)


class InternalFailure(_Frozen):
    """The sandbox or the host interface failed; not the script's fault."""

    kind: Literal["internal_error"] = "internal_error"
    message: Message

    def to_error(self, request: PhaseRequest | None = None) -> KeepError | None:
        """The matching `InternalError`."""
        return InternalError(self.message)


Outcome = Annotated[
    Completed | MutationRequested | LogicFailure | LimitFailure | CallFailed | InternalFailure,
    Field(discriminator="kind"),
]
"""Exactly one of the ways a phase can end."""


class PhaseResult(_Frozen):
    """How the phase ended and what happened on the way."""

    outcome: Outcome
    trace: Trace = Field(default_factory=Trace)
    isolation: Literal["in_process", "process"] = "in_process"
