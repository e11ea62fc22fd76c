"""The durable-operation part of the store contract: row access and commit points.

`DurableRows` is what a `Transaction` adds to keep invocation records, the
notification inbox and append-only attempts; `SupportsDurable` is what a store
offers the runtime. Every `TransactionalStore` whose transactions implement
`DurableRows` (the memory and SQL stores do) supports durable operations.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable, Sequence
from typing import Literal, Protocol, runtime_checkable

from pydantic import JsonValue

from keep_sdk.contract.durable import (
    Attempt,
    AttemptKind,
    DurableAnswer,
    Invocation,
    InvocationStatus,
    Notification,
)
from keep_sdk.model import LedgerEntry, RunRecord

__all__ = ["DurableRows", "PersonSettlement", "SupportsDurable"]

PersonSettlement = Literal["cancel", "skip", "supply"]
"""How a person settles a waiting durable operation: cancel it (``next`` sees
``{status: "skipped"}``), skip it (the same, without cancelling an invocation that timed
out), or supply its result by hand (``next`` sees ``{status: "applied", result}``)."""


class DurableRows(Protocol):
    """Rows of invocations, notifications and attempts inside one transaction."""

    def invocation(self, invocation_id: str) -> Invocation | None:
        """The invocation `invocation_id`."""
        ...

    def invocation_by_key(self, correlation_key: str) -> Invocation | None:
        """The invocation with this correlation key."""
        ...

    def invocation_for_run(self, run_id: str) -> Invocation | None:
        """The invocation of run `run_id` (a run has at most one)."""
        ...

    def invocations(self) -> Iterable[Invocation]:
        """Every invocation, in creation order."""
        ...

    def insert_invocation(self, invocation: Invocation) -> None:
        """Add a new invocation; an existing id, correlation key or run raises
        `MutationConflict`."""
        ...

    def update_invocation(self, before: Invocation, after: Invocation) -> bool:
        """Write `after` if the stored invocation still has the status and claim_version of
        `before`; whether it did."""
        ...

    def due_invocations(self, now: dt.datetime, limit: int) -> list[Invocation]:
        """Active polling invocations with ``next_poll_at <= now``, earliest first; the cost
        must not grow with invocations that are not due."""
        ...

    def expired_invocations(self, now: dt.datetime, limit: int) -> list[Invocation]:
        """Active invocations with ``timeout_at <= now``, earliest first; the cost must not
        grow with invocations that did not time out (an index on ``timeout_at``)."""
        ...

    def notification(self, notification_id: str) -> Notification | None:
        """The notification `notification_id`."""
        ...

    def notifications(self, invocation_id: str) -> list[Notification]:
        """The notifications of one invocation, oldest first."""
        ...

    def pending_notifications(self, limit: int) -> list[Notification]:
        """Up to `limit` unprocessed notifications, oldest first (an index on the pending)."""
        ...

    def insert_notification(self, notification: Notification) -> None:
        """Add a delivery to the inbox."""
        ...

    def update_notification(self, before: Notification, after: Notification) -> bool:
        """Write `after` if the stored notification still has the outcome of `before`."""
        ...

    def append_attempt(self, attempt: Attempt) -> Attempt:
        """Append `attempt` under the next seq (increasing from 1); return it as stored."""
        ...

    def attempts(self, invocation_id: str) -> list[Attempt]:
        """The attempts of one invocation, in seq order."""
        ...


@runtime_checkable
class SupportsDurable(Protocol):
    """A store that keeps durable invocations (see docs/durable.md).

    Each method is one atomic commit point or a query, like `Store`'s.
    """

    def record_durable_intent(
        self,
        run_id: str,
        *,
        connector: str,
        operation: str,
        params: JsonValue,
        idempotency_key: str,
        invocation_id: str,
        correlation_key: str,
        timeout_at: dt.datetime | None,
        ui_title: str | None = None,
    ) -> tuple[LedgerEntry, Invocation]:
        """Ledger entry ``in_flight`` and invocation ``active`` in one transaction, before
        ``start`` is called."""
        ...

    def record_start_answer(
        self,
        invocation_id: str,
        answer: DurableAnswer,
        *,
        kind: AttemptKind = AttemptKind.START,
        next_poll_at: dt.datetime | None = None,
        logs: Sequence[str] = (),
        claim_version: int | None = None,
    ) -> tuple[Invocation, RunRecord]:
        """Integrate a ``start`` or ``poll`` answer with its attempt record.

        With `claim_version` (a poll), only while that claim is still the newest:
        `StoreConflict` otherwise, so two workers never both integrate one ``done``.

        `Pending`: token and external id kept, an active run parks
        (``paused:waiting``, reservations kept). `Done` ok: invocation completed,
        ledger applied, run ``mutated`` (a parked run becomes active). `Done`
        error: invocation and ledger failed.
        """
        ...

    def receive_notification(
        self, correlation_key: str, result: JsonValue, *, source: str
    ) -> Notification:
        """Record a delivery in the inbox. `NotFound` for an unknown key (nothing written).
        For an invocation no longer active it is recorded as ``duplicate`` or ``ignored``
        and changes nothing else."""
        ...

    def apply_notification(self, notification_id: str) -> tuple[Notification, RunRecord]:
        """Complete the parked run's invocation with a pending notification: invocation
        completed, ledger applied, run ``mutated`` and active, the notification applied and
        any other pending one of the key a duplicate. `StoreConflict` while the run is not
        parked yet (the notification stays pending)."""
        ...

    def claim_invocation(
        self, invocation_id: str, owner: str, *, until: dt.datetime
    ) -> Invocation | None:
        """Claim an active invocation for polling by compare-and-swap: free or expired claims
        are taken (claim_version + 1); None when another owner holds a live claim."""
        ...

    def end_invocation(
        self,
        invocation_id: str,
        status: InvocationStatus,
        *,
        actor: str,
        detail: str,
        kind: AttemptKind,
    ) -> Invocation:
        """Move an active invocation to `status` (timed_out, cancelled) with its attempt."""
        ...

    def resolve_invocation(
        self,
        invocation_id: str,
        action: PersonSettlement,
        *,
        actor: str,
        result: JsonValue = None,
        detail: str | None = None,
    ) -> tuple[Invocation, RunRecord]:
        """A person settles a waiting (or timed-out) invocation, audited, in one transaction:
        the invocation ends (cancelled, or completed with `result` for ``supply``), the
        ledger entry records who resolved it, the run becomes active at ``emitting`` with
        ``{status: "skipped"}`` (or at ``mutated`` with the result), pending notifications
        are ignored. `MutationConflict` for an ended invocation, `ActiveRunExists` while
        another run of the workflow is active."""
        ...

    def record_poll_failure(
        self, invocation_id: str, *, error: str, next_poll_at: dt.datetime, claim_version: int
    ) -> Invocation:
        """A poll that raised: its attempt, the next poll time, the claim released."""
        ...

    def record_attempt(
        self, invocation_id: str, kind: AttemptKind, outcome: str, detail: JsonValue = None
    ) -> Attempt:
        """Append one attempt record (a best-effort cancel's outcome, say)."""
        ...

    def extend_invocation(
        self, invocation_id: str, *, timeout_at: dt.datetime | None, actor: str
    ) -> Invocation:
        """Give an invocation a new deadline (audited); a timed-out one becomes active again
        and its run waits again (``paused:timeout`` → ``paused:waiting``)."""
        ...

    def time_out_invocation(self, invocation_id: str) -> tuple[Invocation, RunRecord] | None:
        """If the invocation is active, parked and past ``timeout_at``: invocation
        ``timed_out``, run ``paused:timeout``, a timeout attempt; None (nothing written)
        otherwise."""
        ...

    def get_invocation(self, invocation_id: str) -> Invocation:
        """The invocation (`NotFound` if missing)."""
        ...

    def invocation_by_key(self, correlation_key: str) -> Invocation:
        """The invocation with this correlation key (`NotFound` if none)."""
        ...

    def invocation_for_run(self, run_id: str) -> Invocation | None:
        """The invocation of a run, if it called a durable operation."""
        ...

    def list_invocations(
        self, *, workflow: str | None = None, status: InvocationStatus | None = None
    ) -> list[Invocation]:
        """Invocations in creation order, filtered."""
        ...

    def deliverable_notifications(self, limit: int = 100) -> list[Notification]:
        """Pending notifications whose run is parked, oldest first."""
        ...

    def due_polls(self, now: dt.datetime | None = None, limit: int = 100) -> list[Invocation]:
        """Active polling invocations due at `now`."""
        ...

    def expired_invocations(
        self, now: dt.datetime | None = None, limit: int = 100
    ) -> list[Invocation]:
        """Active invocations past their timeout at `now`."""
        ...

    def list_notifications(self, invocation_id: str) -> list[Notification]:
        """Every delivery for one invocation, oldest first."""
        ...

    def list_attempts(self, invocation_id: str) -> list[Attempt]:
        """The append-only attempt records of an invocation."""
        ...
