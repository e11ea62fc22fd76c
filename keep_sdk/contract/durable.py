"""Durable operations: what connectors, stores and the runtime agree on.

A durable operation starts long external work (a person's approval, a report
job) and parks its run until the work completes. The host derives a
deterministic `Invocation` id and correlation key, persists the invocation with
the ledger intent, then calls the connector's ``start`` with an
`InvocationContext`; ``start`` (and ``poll``) answer `Pending` or `Done`.
Completion arrives either as a `Notification` in the store's inbox, keyed by
correlation key, or as a `Done` from polling. Every start, poll answer,
notification and person's action appends an `Attempt`.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import re
from enum import StrEnum
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, JsonValue
from pydantic.alias_generators import to_camel

from keep_sdk.errors import InvalidArguments
from keep_sdk.model import UtcDatetime

__all__ = [
    "CORRELATION_KEY_PATTERN",
    "Attempt",
    "AttemptKind",
    "Done",
    "DurableAnswer",
    "Invocation",
    "InvocationContext",
    "InvocationStatus",
    "Notification",
    "NotificationOutcome",
    "NotifyResult",
    "Pending",
    "check_correlation_key",
    "derive_invocation",
    "parse_duration",
]

CORRELATION_KEY_PATTERN = re.compile(r"^kc-[0-9a-f]{40}$")
"""A correlation key: ``kc-`` and 40 lowercase hex digits."""


class _Model(BaseModel):
    model_config = ConfigDict(
        alias_generator=to_camel, populate_by_name=True, extra="forbid", frozen=True
    )


class InvocationStatus(StrEnum):
    """Where a durable invocation is; only ``active`` ever changes."""

    ACTIVE = "active"
    COMPLETED = "completed"
    FAILED = "failed"
    TIMED_OUT = "timed_out"
    CANCELLED = "cancelled"


class InvocationContext(_Model):
    """What a connector's ``start`` and ``poll`` receive besides the arguments.

    `invocation_id` is the idempotency token: a second ``start`` with the same
    token must not start a second external process. `correlation_key` is what
    the external system sends back with its notification.
    """

    invocation_id: str
    correlation_key: str
    idempotency_key: str
    timeout_at: UtcDatetime | None = None
    token: str | None = Field(default=None, description="The newest pending token, if any.")


class Pending(_Model):
    """The work goes on: poll again later with `token` (None: wait for a notification)."""

    status: Literal["pending"] = "pending"
    token: str | None = None
    external_id: str | None = Field(
        default=None, description="The external process id, recorded best-effort."
    )


class Done(_Model):
    """The work finished: `ok` with a result, or a definite failure with an error."""

    status: Literal["done"] = "done"
    ok: bool = True
    result: JsonValue = None
    error: str | None = None
    external_id: str | None = None


DurableAnswer = Annotated[Pending | Done, Field(discriminator="status")]
"""What ``start`` and ``poll`` answer."""


class Invocation(_Model):
    """A durable operation's invocation record, persisted with the ledger intent."""

    id: str
    run_id: str
    ledger_id: str
    workflow: str
    handler: str
    connector: str
    operation: str
    correlation_key: str
    status: InvocationStatus = InvocationStatus.ACTIVE
    started: bool = Field(default=False, description="A start answer was recorded.")
    external_id: str | None = None
    token: str | None = None
    polling: bool = False
    next_poll_at: UtcDatetime | None = None
    polls: int = Field(default=0, ge=0)
    claim_owner: str | None = None
    claim_until: UtcDatetime | None = None
    claim_version: int = Field(default=0, ge=0)
    parked_at: UtcDatetime | None = None
    timeout_at: UtcDatetime | None = None
    result: JsonValue = None
    error: str | None = None
    created_at: UtcDatetime
    updated_at: UtcDatetime


class NotificationOutcome(StrEnum):
    """What processing a notification did."""

    PENDING = "pending"
    """Recorded, not processed yet (the run is not parked yet, or no worker ran)."""
    APPLIED = "applied"
    DUPLICATE = "duplicate"
    """The invocation had already completed: recorded, changed nothing."""
    IGNORED = "ignored"
    """The invocation was cancelled, timed out or failed: recorded, changed nothing."""


class Notification(_Model):
    """One delivery to the inbox; every delivery is kept, at most one is applied per key."""

    id: str
    correlation_key: str
    invocation_id: str
    workflow: str
    result: JsonValue = None
    source: str = "api"
    outcome: NotificationOutcome = NotificationOutcome.PENDING
    detail: str | None = None
    received_at: UtcDatetime
    processed_at: UtcDatetime | None = None


class NotifyResult(_Model):
    """The result a person or system delivers for a correlation key (``keep notify``)."""

    correlation_key: Annotated[str, Field(pattern=CORRELATION_KEY_PATTERN.pattern)]
    result: JsonValue = None


class AttemptKind(StrEnum):
    """What an attempt record records."""

    START = "start"
    POLL = "poll"
    NOTIFICATION = "notification"
    TIMEOUT = "timeout"
    ACTION = "action"
    CANCEL = "cancel"


class Attempt(_Model):
    """One append-only execution record of an invocation; nothing is ever overwritten."""

    seq: int = Field(ge=1)
    invocation_id: str
    kind: AttemptKind
    outcome: str
    detail: JsonValue = None
    at: UtcDatetime


def derive_invocation(
    workflow: str, handler: str, chain_root: str, key_values: tuple[str, ...] = ()
) -> tuple[str, str]:
    """The deterministic ``(invocation_id, correlation_key)`` of a run chain's durable call.

    The same workflow, consumer, retry-chain root and declared key field values
    always give the same pair, so a re-issued ``start`` carries the same token.
    """
    material = "\x1f".join((workflow, handler, chain_root, *key_values)).encode()
    digest = hashlib.sha256(material).hexdigest()
    key = hashlib.sha256(b"correlation\x1f" + material).hexdigest()
    return f"inv-{digest[:40]}", f"kc-{key[:40]}"


def check_correlation_key(key: str) -> str:
    """`key` if it is well-formed; `InvalidArguments` saying what one looks like otherwise."""
    if not CORRELATION_KEY_PATTERN.fullmatch(key):
        shown = key if len(key) <= 60 else key[:57] + "..."
        raise InvalidArguments(
            f"malformed correlation key {shown!r}: a correlation key is 'kc-' followed by 40 "
            "lowercase hex digits, as `keep status` shows it",
            problems=[
                f"correlation key {shown!r} does not match {CORRELATION_KEY_PATTERN.pattern}"
            ],
        )
    return key


_DURATION = re.compile(
    r"^P(?:(?P<weeks>\d+)W)?(?:(?P<days>\d+)D)?"
    r"(?:T(?:(?P<hours>\d+)H)?(?:(?P<minutes>\d+)M)?(?:(?P<seconds>\d+(?:\.\d+)?)S)?)?$"
)


def parse_duration(text: str) -> dt.timedelta:
    """An ISO 8601 duration without years or months (``P14D``, ``PT2H30M``, ``P1W``).

    Raises `InvalidArguments` naming the value and the accepted form.
    """
    found = _DURATION.match(text)
    if found is None or text in ("P", "PT") or text.endswith("T"):
        raise InvalidArguments(
            f"invalid duration {text!r}: use ISO 8601 weeks, days and time, e.g. 'P14D', "
            "'PT2H30M' or 'P1W' (years and months are not fixed lengths)",
            problems=[f"duration {text!r} is not ISO 8601 PnWnDTnHnMnS"],
        )
    parts = {k: float(v) for k, v in found.groupdict().items() if v is not None}
    return dt.timedelta(**parts)
