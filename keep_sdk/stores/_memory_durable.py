"""The memory store's `DurableRows`: invocations, the inbox and attempts in dicts.

`DurableTables` holds the rows and the lookups derived from them; the mixin
`MemoryDurableRows` writes through `_put`, so the memory transaction's undo log
covers these rows too.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Iterable
from typing import Any

from keep_sdk.contract.durable import (
    Attempt,
    Invocation,
    InvocationStatus,
    Notification,
    NotificationOutcome,
)
from keep_sdk.errors import MutationConflict

__all__ = ["DurableTables", "MemoryDurableRows"]


class DurableTables:
    """Rows of durable operations, each keyed by id, with key and run lookups."""

    def __init__(self) -> None:
        self.invocations: dict[str, Invocation] = {}
        self.by_key: dict[str, str] = {}
        self.by_run: dict[str, str] = {}
        self.notifications: dict[str, Notification] = {}
        self.attempts: dict[int, Attempt] = {}


class MemoryDurableRows:
    """`DurableRows` for `_MemoryTransaction` (it supplies `_durable` and `_put`)."""

    _durable: DurableTables
    _undo: list[Callable[[], object]]

    def _put(self, table: dict[Any, Any], key: Any, value: Any) -> None:
        raise NotImplementedError

    def invocation(self, invocation_id: str) -> Invocation | None:
        return self._durable.invocations.get(invocation_id)

    def invocation_by_key(self, correlation_key: str) -> Invocation | None:
        found = self._durable.by_key.get(correlation_key)
        return self._durable.invocations[found] if found else None

    def invocation_for_run(self, run_id: str) -> Invocation | None:
        found = self._durable.by_run.get(run_id)
        return self._durable.invocations[found] if found else None

    def invocations(self) -> Iterable[Invocation]:
        return list(self._durable.invocations.values())

    def insert_invocation(self, invocation: Invocation) -> None:
        t = self._durable
        if (
            invocation.id in t.invocations
            or invocation.correlation_key in t.by_key
            or invocation.run_id in t.by_run
        ):
            raise MutationConflict(f"durable invocation {invocation.id} exists already")
        self._put(t.invocations, invocation.id, invocation)
        self._put(t.by_key, invocation.correlation_key, invocation.id)
        self._put(t.by_run, invocation.run_id, invocation.id)

    def update_invocation(self, before: Invocation, after: Invocation) -> bool:
        stored = self._durable.invocations.get(before.id)
        if stored is None or (stored.status, stored.claim_version) != (
            before.status,
            before.claim_version,
        ):
            return False
        self._put(self._durable.invocations, after.id, after)
        return True

    def due_invocations(self, now: dt.datetime, limit: int) -> list[Invocation]:
        due = [
            i
            for i in self._durable.invocations.values()
            if i.status is InvocationStatus.ACTIVE
            and i.next_poll_at is not None
            and i.next_poll_at <= now
        ]
        return sorted(due, key=lambda i: (i.next_poll_at, i.id))[:limit]

    def expired_invocations(self, now: dt.datetime, limit: int) -> list[Invocation]:
        due = [
            i
            for i in self._durable.invocations.values()
            if i.status is InvocationStatus.ACTIVE
            and i.timeout_at is not None
            and i.timeout_at <= now
        ]
        return sorted(due, key=lambda i: (i.timeout_at, i.id))[:limit]

    def notification(self, notification_id: str) -> Notification | None:
        return self._durable.notifications.get(notification_id)

    def notifications(self, invocation_id: str) -> list[Notification]:
        return [n for n in self._durable.notifications.values() if n.invocation_id == invocation_id]

    def pending_notifications(self, limit: int) -> list[Notification]:
        pending = (
            n
            for n in self._durable.notifications.values()
            if n.outcome is NotificationOutcome.PENDING
        )
        return [n for _, n in zip(range(limit), pending, strict=False)]

    def insert_notification(self, notification: Notification) -> None:
        self._put(self._durable.notifications, notification.id, notification)

    def update_notification(self, before: Notification, after: Notification) -> bool:
        stored = self._durable.notifications.get(before.id)
        if stored is None or stored.outcome is not before.outcome:
            return False
        self._put(self._durable.notifications, after.id, after)
        return True

    def append_attempt(self, attempt: Attempt) -> Attempt:
        stored = attempt.model_copy(update={"seq": len(self._durable.attempts) + 1})
        self._put(self._durable.attempts, stored.seq, stored)
        return stored

    def attempts(self, invocation_id: str) -> list[Attempt]:
        return [a for a in self._durable.attempts.values() if a.invocation_id == invocation_id]
