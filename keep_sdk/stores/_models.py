"""Models that only stores speak: workflows, handlers, publications, audit entries, leases.

The contract models scripts see (`Event`, `RunRecord`, `LedgerEntry`...) live in
`keep_sdk.model`; these are the extra shapes of the store boundary.
"""

from __future__ import annotations

import datetime as dt
from enum import Enum, StrEnum

from pydantic import BaseModel, ConfigDict, Field, JsonValue

from keep_sdk.model import (
    Event,
    HandlerKind,
    LedgerEntry,
    PublishRequest,
    RunRecord,
    Title,
    UtcDatetime,
)
from keep_sdk.model import Name as _Name

__all__ = [  # noqa: RUF022 (plain sorted(), as tests/test_public_api.py checks)
    "AuditEntry",
    "BegunRun",
    "ConsumerWake",
    "HandlerRecord",
    "HandlerSpec",
    "Lease",
    "MutationIntent",
    "Publication",
    "PublishOutcome",
    "PublishResult",
    "Resolution",
    "RunCommit",
    "StatusCounts",
    "UNCHANGED",
    "Unchanged",
    "WakeReason",
    "WorkflowRecord",
    "WorkflowVersion",
]

Name = _Name


class _StoreModel(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class Unchanged(Enum):
    """Type of `UNCHANGED`: a handler returned ``undefined``, so its state stays as it was."""

    UNCHANGED = "unchanged"


UNCHANGED = Unchanged.UNCHANGED
"""Pass as ``state`` to a commit to keep the handler's stored state (JS ``undefined``)."""


class PublishOutcome(StrEnum):
    """What a publish did: the idempotency rule of DESIGN.md, made visible."""

    CREATED = "created"
    REPLACED = "replaced"
    DUPLICATE = "duplicate"


class Resolution(StrEnum):
    """A person's answer about an uncertain mutation."""

    HAPPENED = "happened"
    DIDNT_HAPPEN = "didnt_happen"
    SKIP = "skip"


class WakeReason(StrEnum):
    """Why a consumer should run now."""

    PENDING_EVENTS = "pending_events"
    WAKE_AT = "wake_at"


class HandlerSpec(_StoreModel):
    """A handler a deployed version declares; consumers name the topics they subscribe to."""

    name: Name
    kind: HandlerKind
    subscribe: list[Name] = Field(default_factory=list)


class WorkflowRecord(_StoreModel):
    """A deployed workflow: its current version, whether a person paused it, its grants."""

    name: Name
    version: int = Field(ge=1)
    paused: bool = False
    grants: list[str] = Field(default_factory=list, description="Granted permissions, sorted.")
    created_at: UtcDatetime
    updated_at: UtcDatetime


class WorkflowVersion(_StoreModel):
    """One deployed version of a workflow: the script and its manifest, never changed."""

    workflow: Name
    version: int = Field(ge=1)
    source: str
    manifest: JsonValue
    handlers: list[HandlerSpec] = Field(default_factory=list)
    created_at: UtcDatetime


class HandlerRecord(_StoreModel):
    """A handler's durable bookkeeping: its state and when it should run next.

    `has_state` is False until a run first commits a state (the handler then
    receives ``undefined``); `state` may be JSON ``null`` once set.
    """

    workflow: Name
    name: Name
    kind: HandlerKind
    version: int = Field(ge=1, description="Latest workflow version that declares it.")
    subscribe: list[Name] = Field(default_factory=list)
    has_state: bool = False
    state: JsonValue = None
    wake_at: UtcDatetime | None = None
    next_run_at: UtcDatetime | None = None
    updated_at: UtcDatetime


class Publication(_StoreModel):
    """An event to publish: the topic plus a `PublishRequest` whose messageId is known."""

    topic: Name
    message_id: Name
    title: Title
    payload: JsonValue = None

    @classmethod
    def from_request(
        cls, topic: str, request: PublishRequest, *, default_message_id: str
    ) -> Publication:
        """The publication for `request`, using `default_message_id` when it has none."""
        return cls(
            topic=topic,
            message_id=request.message_id or default_message_id,
            title=request.title,
            payload=request.payload,
        )


class PublishResult(_StoreModel):
    """The outcome of one publish and the event as stored afterwards."""

    outcome: PublishOutcome
    event: Event


class RunCommit(_StoreModel):
    """What a committed run left behind: the run and the outcome of each publish, in order."""

    run: RunRecord
    published: list[PublishResult] = Field(default_factory=list)


class MutationIntent(_StoreModel):
    """The one mutation a run hands to the host, as its ledger entry records it."""

    connector: str
    operation: str
    params: JsonValue
    idempotency_key: str
    ui_title: str | None = None


class BegunRun(_StoreModel):
    """What `begin_consumer_run` wrote: the run and, when it recorded one, its intent."""

    run: RunRecord
    entry: LedgerEntry | None = None


class ConsumerWake(_StoreModel):
    """A consumer the scheduler should run: it has pending events or its wakeAt is due."""

    workflow: Name
    handler: Name
    reason: WakeReason
    wake_at: UtcDatetime | None = None


class AuditEntry(_StoreModel):
    """One action a person (or an operator tool) took; the audit log is append-only."""

    seq: int = Field(ge=1, description="Position in the log; increases with every entry.")
    at: UtcDatetime
    actor: str
    action: str
    workflow: str | None = None
    target: str
    detail: JsonValue = None


class StatusCounts(_StoreModel):
    """How many events and runs each workflow has, by status (workflows without any are
    left out)."""

    events: dict[str, dict[str, int]] = Field(default_factory=dict)
    """workflow → event status → count."""
    runs: dict[str, dict[str, int]] = Field(default_factory=dict)
    """workflow → run status → count."""


class Lease(_StoreModel):
    """A worker's claim on a workflow until `expires_at`.

    `token` increases with every acquisition by a new owner (a fencing token):
    a heartbeat or release with an older token raises `LeaseLost`.
    """

    workflow: Name
    owner: Name
    token: int = Field(ge=1)
    acquired_at: UtcDatetime
    expires_at: UtcDatetime

    def expired(self, now: dt.datetime) -> bool:
        """Whether the lease has run out at `now`."""
        return self.expires_at <= now
