"""The contract models: what scripts return, what stores keep, what the host enforces.

Field names that scripts see are camelCase aliases (``messageId``, ``wakeAt``);
Python code uses the snake_case names. Every model dumps ``by_alias`` for JSON
and accepts either spelling on input.

`explain_validation_error` turns a pydantic ``ValidationError`` into lines a
script author (or an LLM repairing the script) can act on. `trusted` builds a model from
values the SDK's own code produced, without validating them again.
"""

from __future__ import annotations

import datetime as dt
from enum import StrEnum
from typing import Annotated, Any, Literal, TypeVar

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    JsonValue,
    TypeAdapter,
    ValidationError,
    field_validator,
)
from pydantic.alias_generators import to_camel

__all__ = [
    "BackoffPolicy",
    "Escalation",
    "Event",
    "EventStatus",
    "FailureKind",
    "HandlerKind",
    "HandlerPhase",
    "HostPolicy",
    "LedgerEntry",
    "LedgerStatus",
    "MutationApplied",
    "MutationNone",
    "MutationResult",
    "MutationSkipped",
    "OperationKind",
    "PhaseTrace",
    "PrepareResult",
    "PublishRequest",
    "ReconcileOutcome",
    "ReconcileStatus",
    "Reservation",
    "RunPhase",
    "RunRecord",
    "RunStatus",
    "SandboxLimits",
    "TraceCall",
    "UiInfo",
    "explain_validation_error",
    "json_schema",
    "schema_names",
    "trusted",
]


class _Contract(BaseModel):
    """Base of every contract model: camelCase aliases, strict about unknown fields."""

    model_config = ConfigDict(
        alias_generator=to_camel,
        populate_by_name=True,
        extra="forbid",
        frozen=True,
        use_enum_values=False,
    )


class EventStatus(StrEnum):
    """Where an event is in its lifecycle (host-managed, never set by scripts)."""

    PENDING = "pending"
    RESERVED = "reserved"
    CONSUMED = "consumed"
    SKIPPED = "skipped"


class RunPhase(StrEnum):
    """How far a run has got. Only moves forward; failures never change it."""

    PREPARING = "preparing"
    PREPARED = "prepared"
    MUTATING = "mutating"
    MUTATED = "mutated"
    EMITTING = "emitting"
    COMMITTED = "committed"


class RunStatus(StrEnum):
    """Why a run is running, waiting or stopped. Orthogonal to `RunPhase`."""

    ACTIVE = "active"
    PAUSED_TRANSIENT = "paused:transient"
    PAUSED_APPROVAL = "paused:approval"
    PAUSED_RECONCILIATION = "paused:reconciliation"
    PAUSED_WAITING = "paused:waiting"
    """Parked on a durable operation: waits for its notification or poll; holds no lease."""
    PAUSED_TIMEOUT = "paused:timeout"
    """A durable operation's park timeout passed: waits for a person (extend, start again,
    supply the result, skip or cancel)."""
    FAILED_LOGIC = "failed:logic"
    FAILED_INTERNAL = "failed:internal"
    COMMITTED = "committed"
    CRASHED = "crashed"


class LedgerStatus(StrEnum):
    """State of the one mutation a consumer run may perform."""

    IN_FLIGHT = "in_flight"
    APPLIED = "applied"
    FAILED = "failed"
    NEEDS_RECONCILE = "needs_reconcile"
    INDETERMINATE = "indeterminate"


class HandlerKind(StrEnum):
    """Producer or consumer."""

    PRODUCER = "producer"
    CONSUMER = "consumer"


class HandlerPhase(StrEnum):
    """A piece of script the sandbox runs on its own: what `ctx` offers depends on it."""

    PRODUCER = "producer"
    PREPARE = "prepare"
    MUTATE = "mutate"
    NEXT = "next"


class OperationKind(StrEnum):
    """What a connector operation does to the external system."""

    READ = "read"
    READ_BY_ID = "read_by_id"
    MUTATION = "mutation"
    DURABLE = "durable"
    """A mutation that starts long external work: the run parks until it completes."""


class FailureKind(StrEnum):
    """The failure classes of the routing table (chapter 09)."""

    TRANSIENT = "transient"
    LOGIC = "logic"
    PERMISSION = "permission"
    PRECONDITION = "precondition"
    INDETERMINATE = "indeterminate"
    INTERNAL = "internal"


class ReconcileStatus(StrEnum):
    """What a connector's reconcile method learned about an uncertain mutation."""

    APPLIED = "applied"
    FAILED = "failed"
    RETRY = "retry"


def _utc(value: dt.datetime) -> dt.datetime:
    if value.tzinfo is None:
        return value.replace(tzinfo=dt.UTC)
    return value.astimezone(dt.UTC)


UtcDatetime = Annotated[dt.datetime, AfterValidator(_utc)]
"""A datetime; a value without a zone is taken as UTC, and all are stored in UTC."""


def _no_nul(value: str) -> str:
    if "\x00" in value:
        raise ValueError(
            "contains a NUL character (U+0000), which names and titles may not hold "
            "(a store's text columns cannot); remove it"
        )
    return value


Name = Annotated[str, Field(min_length=1, max_length=200), AfterValidator(_no_nul)]
Title = Annotated[str, Field(min_length=1, max_length=500), AfterValidator(_no_nul)]


class PublishRequest(_Contract):
    """What a script passes to ``ctx.publish(topic, {messageId, title, payload})``."""

    message_id: Name | None = Field(
        default=None,
        description="Stable id; a repeat publish with the same id is deduplicated. "
        "Omitted: the host derives one from the run, so a replay re-publishes the same id.",
    )
    title: Title = Field(
        description="What the event represents, in the user's terms, with a stable "
        'external identifier: Email from alice@example.com: "Invoice December".'
    )
    payload: JsonValue = Field(default=None, description="Any JSON value.")


class Event(_Contract):
    """An event in a topic, as stored by the host."""

    id: str = Field(description="Host id of the event, unique in the store.")
    workflow: Name
    topic: Name
    message_id: Name
    title: str
    payload: JsonValue = None
    status: EventStatus = EventStatus.PENDING
    reserved_by: str | None = Field(default=None, description="Run that reserved it.")
    created_by: str | None = Field(default=None, description="Run that published it.")
    attempt: int = Field(default=0, ge=0, description="Runs that reserved it and did not commit.")
    created_at: UtcDatetime
    updated_at: UtcDatetime


class Reservation(_Contract):
    """Events a run will consume if it commits: one topic, the messageIds in it."""

    topic: Name
    ids: list[Name] = Field(min_length=1)


class UiInfo(_Contract):
    """User-facing description of the pending mutation."""

    title: Annotated[str, Field(max_length=500)] | None = Field(
        default=None,
        description='What the mutation will do in user terms: "Add row for alice@example.com".',
    )


class PrepareResult(_Contract):
    """What ``prepare`` returns: pinned inputs, data for mutate/next, a title, a wake time."""

    reservations: list[Reservation] = Field(default_factory=list)
    data: JsonValue = Field(default_factory=dict)
    ui: UiInfo | None = None
    wake_at: UtcDatetime | None = Field(
        default=None,
        description="ISO 8601 time at which to run this consumer again (clamped by policy).",
    )

    @property
    def reserved_ids(self) -> dict[str, list[str]]:
        """The reserved messageIds grouped by topic, in declaration order, no repeats."""
        grouped: dict[str, dict[str, None]] = {}
        for reservation in self.reservations:
            grouped.setdefault(reservation.topic, {}).update(dict.fromkeys(reservation.ids))
        return {topic: list(ids) for topic, ids in grouped.items()}


class MutationApplied(_Contract):
    """The mutation took effect; `result` is what the connector returned."""

    status: Literal["applied"] = "applied"
    result: JsonValue = None


class MutationNone(_Contract):
    """No mutation happened: reservations were empty or mutate called none."""

    status: Literal["none"] = "none"


class MutationSkipped(_Contract):
    """A person chose to skip an uncertain mutation."""

    status: Literal["skipped"] = "skipped"


MutationResult = Annotated[
    MutationApplied | MutationNone | MutationSkipped, Field(discriminator="status")
]
"""The ``mutationResult`` argument of ``next``."""


class ReconcileOutcome(_Contract):
    """What a reconcile method returns."""

    status: ReconcileStatus
    result: JsonValue = None
    detail: str | None = None


class TraceCall(_Contract):
    """One call a phase made, as the run's trace keeps it (secrets redacted).

    `operation` is ``connector.operation`` or a topic call (``peek``, ``getByIds``,
    ``publish``). `status`: ``ok`` (the result was returned to the script),
    ``failed`` (the call raised; `error` and `failure` say what), ``refused`` (the
    sandbox or host refused it: phase, topic, arguments, permission or a limit),
    ``requested`` (the mutation `mutate` asked for; `result` or `error` is the
    outcome of the host performing it), ``dropped`` (queued after the phase ended).
    `arguments` and `result` are None when they did not fit the trace budget
    (`SandboxLimits.max_trace_bytes`); `PhaseTrace.truncated` says so.
    """

    operation: str
    arguments: JsonValue = None
    status: Literal["ok", "failed", "refused", "requested", "dropped"]
    result: JsonValue = None
    error: str | None = None
    failure: FailureKind | None = Field(
        default=None, description="How the error is routed (chapter 09), when the call failed."
    )
    duration_s: float = Field(default=0.0, ge=0)
    line: int | None = Field(default=None, description="1-based script line of the call.")


class PhaseTrace(_Contract):
    """The calls of one handler phase of a run, in the order the script made them."""

    phase: HandlerPhase
    calls: list[TraceCall] = Field(default_factory=list)
    truncated: bool = Field(
        default=False, description="Arguments or results were left out (the trace budget)."
    )
    wall_time_s: float = Field(default=0.0, ge=0)


class RunRecord(_Contract):
    """One producer or consumer run, as the store keeps it."""

    id: str
    workflow: Name
    workflow_version: int = Field(ge=1)
    handler: Name
    kind: HandlerKind
    phase: RunPhase = RunPhase.PREPARING
    status: RunStatus = RunStatus.ACTIVE
    retry_of: str | None = Field(default=None, description="Run this one continues.")
    prepare_result: PrepareResult | None = None
    mutation_result: MutationResult | None = None
    input_state: JsonValue = None
    output_state: JsonValue = None
    error: str | None = None
    failure: FailureKind | None = None
    logs: list[str] = Field(default_factory=list)
    created_at: UtcDatetime
    updated_at: UtcDatetime
    resume_at: UtcDatetime | None = Field(
        default=None, description="When a paused:transient run may resume."
    )
    transient_failures: int = Field(
        default=0, ge=0, description="Times the run was paused by a transient failure."
    )
    waiting_permission: str | None = Field(
        default=None, description="The permission a paused:approval run waits for."
    )
    trace: list[PhaseTrace] = Field(
        default_factory=list, description="The phases the run went through and their calls."
    )


class LedgerEntry(_Contract):
    """The durable record of a run's one mutation, written before the external call."""

    id: str
    run_id: str
    workflow: Name
    handler: Name
    connector: Name
    operation: Name
    params: JsonValue
    idempotency_key: str
    status: LedgerStatus = LedgerStatus.IN_FLIGHT
    result: JsonValue = None
    error: str | None = None
    ui_title: str | None = None
    reconcile_attempts: int = Field(default=0, ge=0)
    next_reconcile_at: UtcDatetime | None = None
    resolved_by: str | None = None
    resolved_at: UtcDatetime | None = None
    created_at: UtcDatetime
    updated_at: UtcDatetime


class Escalation(_Contract):
    """A run that waits for a person, and why."""

    run_id: str
    workflow: Name
    reason: str
    actions: list[str] = Field(description="What the person may do: retry, didnt-happen, skip…")
    ledger_id: str | None = None
    created_at: UtcDatetime


class SandboxLimits(_Contract):
    """Per-phase limits of the QuickJS sandbox. Exceeding one is a logic error."""

    cpu_time_s: float = Field(default=5.0, gt=0, description="Cumulative JS time per phase.")
    wall_time_s: float = Field(
        default=30.0, gt=0, description="Wall-clock time per phase, host calls included."
    )
    memory_bytes: int = Field(
        default=64 * 1024 * 1024, ge=1024 * 1024, description="JS heap of one phase's runtime."
    )
    stack_bytes: int = Field(
        default=512 * 1024,
        ge=64 * 1024,
        le=4 * 1024 * 1024,
        description="JS stack; never 0 and never above the thread's real stack.",
    )
    max_jobs: int = Field(default=100_000, ge=1, description="Promise jobs per phase.")
    max_host_calls: int = Field(default=1_000, ge=1, description="ctx calls per phase.")
    max_value_bytes: int = Field(
        default=1024 * 1024, ge=1024, description="JSON size of one argument or result."
    )
    max_value_depth: int = Field(default=64, ge=2, description="Nesting of a value.")
    max_state_bytes: int = Field(default=256 * 1024, ge=64, description="JSON size of state.")
    max_log_bytes: int = Field(
        default=256 * 1024,
        ge=0,
        description="UTF-8 bytes of console output per run, all phases together (limit log_bytes).",
    )
    max_publishes: int = Field(default=500, ge=0, description="ctx.publish calls per run.")
    max_published_bytes: int = Field(
        default=16 * 1024 * 1024, ge=0, description="UTF-8 bytes of JSON published per run."
    )
    max_trace_bytes: int = Field(
        default=1024 * 1024,
        ge=0,
        description="Bytes of ctx call arguments and results kept in a phase's trace.",
    )


class BackoffPolicy(_Contract):
    """Exponential backoff with jitter: ``min(cap, base * factor**(n-1)) * (1 ± jitter)``."""

    base_s: float = Field(default=1.0, gt=0, description="Delay before the first retry.")
    factor: float = Field(default=2.0, ge=1, description="Each further delay is this times longer.")
    cap_s: float = Field(default=300.0, gt=0, description="No delay is longer (before jitter).")
    jitter: float = Field(
        default=0.3, ge=0, le=1, description="Each delay is drawn within ± this fraction."
    )
    max_attempts: int | None = Field(
        default=None, ge=1, description="Give up after this many; None retries forever."
    )

    def delay(self, attempt: int, *, unit_random: float = 0.5) -> float:
        """Seconds to wait before `attempt` (1-based); `unit_random` in [0, 1) draws jitter."""
        raw = min(self.cap_s, self.base_s * self.factor ** max(0, attempt - 1))
        return raw * (1 + self.jitter * (2 * unit_random - 1))


class HostPolicy(_Contract):
    """What the host allows and how it retries. Every field, its default and meaning:
    docs/policy.md (generated from this model)."""

    sandbox: SandboxLimits = Field(
        default_factory=SandboxLimits, description="Limits of each handler phase."
    )
    backoff: BackoffPolicy = Field(
        default_factory=BackoffPolicy, description="Retry delays after a transient failure."
    )
    reconcile_backoff: BackoffPolicy = Field(
        default_factory=lambda: BackoffPolicy(base_s=10.0, cap_s=600.0),
        description=(
            "Delays between reconcile calls of an uncertain mutation (how many calls: "
            "reconcile_attempts; its max_attempts is refused)."
        ),
    )
    reconcile_attempts: int = Field(
        default=5, ge=0, description="Reconcile calls before a mutation is indeterminate."
    )

    @field_validator("reconcile_backoff")
    @classmethod
    def _no_reconcile_max_attempts(cls, value: BackoffPolicy) -> BackoffPolicy:
        if value.max_attempts is not None:
            raise ValueError(
                "max_attempts is not read for reconciliation; how many reconcile calls are "
                "made before a person decides is reconcile_attempts: set "
                "reconcile_attempts instead and remove reconcile_backoff.max_attempts"
            )
        return value

    wake_at_min_s: float = Field(default=30.0, ge=0, description="Earliest wakeAt from now.")
    wake_at_max_s: float = Field(default=86_400.0, gt=0, description="Latest wakeAt from now.")
    mutate_reads: Literal["none", "by_id"] = Field(
        default="none",
        description='"none" (chapter 06b) forbids reads in mutate; "by_id" allows read-by-id.',
    )
    default_producer_interval_s: float = Field(
        default=300.0, gt=0, description="Schedule of a producer declared as a bare function."
    )
    peek_default_limit: int = Field(
        default=100, ge=1, description="Events `ctx.peek` returns when no limit is given."
    )
    peek_max_limit: int = Field(
        default=1_000, ge=1, description="Largest `limit` a `ctx.peek` may ask for."
    )
    mutation_timeout_s: float = Field(
        default=60.0, gt=0, description="A connector call taking longer is an uncertain outcome."
    )


def _location(loc: tuple[int | str, ...]) -> str:
    path = ""
    for part in loc:
        if isinstance(part, int):
            path += f"[{part}]"
        elif part.startswith(("function-after", "function-before", "function-wrap")):
            continue
        else:
            path += f".{part}" if path else part
    return path or "(value)"


def _shown(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def explain_validation_error(exc: ValidationError, *, subject: str | None = None) -> list[str]:
    """One readable line per problem in `exc`, each naming the field and what to do.

    `subject` names what was being checked (``"prepare() result"``,
    ``"arguments of ctx.sheets.appendRow"``) and, when given, starts every line.
    """
    prefix = f"{subject}: " if subject else ""
    lines = []
    for error in exc.errors(include_url=False):
        where = _location(tuple(error["loc"]))
        if error["type"] == "missing":
            line = f"`{where}` is required but missing"
        elif error["type"] == "extra_forbidden":
            line = f"`{where}` is not a known field; remove it"
        else:
            line = f"`{where}`: {error['msg']} (got {_shown(error.get('input'))})"
        lines.append(prefix + line)
    return lines


_SCHEMA_TYPES: dict[str, Any] = {
    "Event": Event,
    "PublishRequest": PublishRequest,
    "Reservation": Reservation,
    "PrepareResult": PrepareResult,
    "MutationResult": MutationResult,
    "ReconcileOutcome": ReconcileOutcome,
    "RunRecord": RunRecord,
    "LedgerEntry": LedgerEntry,
    "Escalation": Escalation,
    "SandboxLimits": SandboxLimits,
    "BackoffPolicy": BackoffPolicy,
    "HostPolicy": HostPolicy,
}


def schema_names() -> list[str]:
    """Names of the contract types whose JSON Schema `json_schema` can produce."""
    return sorted(_SCHEMA_TYPES)


def json_schema(name: str) -> dict[str, Any]:
    """The JSON Schema (by alias, as scripts and JSON output spell fields) of `name`.

    Raises `KeyError` for a name not in `schema_names()`.
    """
    schema: dict[str, Any] = TypeAdapter(_SCHEMA_TYPES[name]).json_schema(by_alias=True)
    schema.setdefault("title", name)
    return schema


Model = TypeVar("Model", bound=BaseModel)

_set = object.__setattr__


def trusted(cls: type[Model], fields: dict[str, Any]) -> Model:
    """An instance of `cls` holding `fields`, which must name every field of `cls` exactly,
    each holding the value and type validation would give it.

    Equal to ``cls.model_construct(**fields)`` without its per-field defaults, alias
    lookup and post-init handling; nothing is validated. For values the SDK's own code
    produced (the validator's models, the rows a store wrote and reads back, whose columns
    already have their types), never for values from outside. Only for models that accept
    their fields by name (no aliases, or ``populate_by_name``), without private attributes
    or ``model_post_init``, and with ``extra`` not set to ``allow``.
    """
    model = cls.__new__(cls)
    _set(model, "__dict__", fields)
    _set(model, "__pydantic_fields_set__", set(fields))
    _set(model, "__pydantic_extra__", None)
    _set(model, "__pydantic_private__", None)
    return model
