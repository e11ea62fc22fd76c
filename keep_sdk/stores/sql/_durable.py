"""The SQL store's `DurableRows`: ``keep_invocations``, ``keep_notifications``, ``keep_attempts``.

Each row keeps its model as JSON (``doc``) beside the columns that are looked
up, indexed or compared: scans read the partial indexes ``ix_invocations_poll``,
``ix_invocations_timeout`` (``WHERE status = 'active'``) and
``ix_notifications_pending``; the unique index ``uq_notifications_applied``
lets at most one notification per invocation be applied. On PostgreSQL a new
notification also sends ``NOTIFY keep_inbox`` (delivered when it commits). Updates are
conditional and check their row counts. On PostgreSQL rows read in a write
transaction are locked ``FOR UPDATE``; a unique index violated by a concurrent writer
ends the transaction with a `StoreConflict`.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable
from typing import Any

from sqlalchemy import (
    Column,
    ColumnElement,
    Connection,
    Select,
    bindparam,
    insert,
    literal_column,
    select,
    text,
    update,
)

from keep_sdk.contract.durable import Attempt, Invocation, Notification
from keep_sdk.errors import MutationConflict
from keep_sdk.stores.sql import _schema as t
from keep_sdk.stores.sql._fast import FastConnection

__all__ = ["INBOX_CHANNEL", "SqlDurableRows"]

INBOX_CHANNEL = "keep_inbox"
"""The PostgreSQL ``LISTEN/NOTIFY`` channel told of every notification at its commit."""

_I = t.invocations
_N = t.notifications
_A = t.attempts


def _invocation_values(invocation: Invocation) -> dict[str, Any]:
    return {
        "id": invocation.id,
        "run_id": invocation.run_id,
        "correlation_key": invocation.correlation_key,
        "workflow": invocation.workflow,
        "status": invocation.status.value,
        "claim_version": invocation.claim_version,
        "next_poll_at": invocation.next_poll_at,
        "timeout_at": invocation.timeout_at,
        "doc": invocation.model_dump(mode="json"),
    }


class SqlDurableRows:
    """`DurableRows` for `SqlTransaction` (it supplies `conn` and `_lock`)."""

    conn: Connection
    fast: FastConnection
    _lock: bool

    def _one(self, query: Select[Any]) -> Any:
        if self._lock:
            query = query.with_for_update()
        return self.conn.execute(query).first()

    def _invocation(self, *where: Any) -> Invocation | None:
        row = self._one(select(_I.c.doc).where(*where))
        return Invocation.model_validate(row.doc) if row is not None else None

    def invocation(self, invocation_id: str) -> Invocation | None:
        return self._invocation(_I.c.id == invocation_id)

    def invocation_by_key(self, correlation_key: str) -> Invocation | None:
        return self._invocation(_I.c.correlation_key == correlation_key)

    def invocation_for_run(self, run_id: str) -> Invocation | None:
        return self._invocation(_I.c.run_id == run_id)

    def invocations(self) -> Iterable[Invocation]:
        found = self.conn.execute(select(_I.c.doc).order_by(_I.c.seq))
        return [Invocation.model_validate(r.doc) for r in found]

    def insert_invocation(self, invocation: Invocation) -> None:
        taken = self.conn.execute(
            select(_I.c.id).where(
                (_I.c.id == invocation.id)
                | (_I.c.correlation_key == invocation.correlation_key)
                | (_I.c.run_id == invocation.run_id)
            )
        ).first()
        if taken is not None:
            raise MutationConflict(f"durable invocation {invocation.id} exists already")
        self.conn.execute(insert(_I).values(**_invocation_values(invocation)))

    def update_invocation(self, before: Invocation, after: Invocation) -> bool:
        values = _invocation_values(after)
        for fixed in ("id", "run_id", "correlation_key", "workflow"):
            values.pop(fixed)
        done = self.conn.execute(
            update(_I)
            .where(
                _I.c.id == before.id,
                _I.c.status == before.status.value,
                _I.c.claim_version == before.claim_version,
            )
            .values(**values)
        )
        return done.rowcount == 1

    def due_invocations(self, now: dt.datetime, limit: int) -> list[Invocation]:
        found = self.fast.execute(_DUE, {"key_now": now, "key_limit": limit})
        return [Invocation.model_validate(r.doc) for r in found]

    def expired_invocations(self, now: dt.datetime, limit: int) -> list[Invocation]:
        found = self.fast.execute(_EXPIRED, {"key_now": now, "key_limit": limit})
        return [Invocation.model_validate(r.doc) for r in found]

    def notification(self, notification_id: str) -> Notification | None:
        row = self._one(select(_N.c.doc).where(_N.c.id == notification_id))
        return Notification.model_validate(row.doc) if row is not None else None

    def notifications(self, invocation_id: str) -> list[Notification]:
        query = select(_N.c.doc).where(_N.c.invocation_id == invocation_id).order_by(_N.c.seq)
        return [Notification.model_validate(r.doc) for r in self.conn.execute(query)]

    def pending_notifications(self, limit: int) -> list[Notification]:
        found = self.fast.execute(_PENDING_NOTIFICATIONS, {"key_limit": limit})
        return [Notification.model_validate(r.doc) for r in found]

    def insert_notification(self, notification: Notification) -> None:
        self.conn.execute(
            insert(_N).values(
                id=notification.id,
                invocation_id=notification.invocation_id,
                outcome=notification.outcome.value,
                doc=notification.model_dump(mode="json"),
            )
        )
        if self.conn.dialect.name == "postgresql":
            self.conn.execute(
                text("SELECT pg_notify(:channel, :workflow)"),
                {"channel": INBOX_CHANNEL, "workflow": notification.workflow},
            )

    def update_notification(self, before: Notification, after: Notification) -> bool:
        done = self.conn.execute(
            update(_N)
            .where(_N.c.id == before.id, _N.c.outcome == before.outcome.value)
            .values(outcome=after.outcome.value, doc=after.model_dump(mode="json"))
        )
        return done.rowcount == 1

    def append_attempt(self, attempt: Attempt) -> Attempt:
        seq = self.conn.execute(
            insert(_A)
            .values(
                invocation_id=attempt.invocation_id,
                doc=attempt.model_dump(mode="json", exclude={"seq"}),
            )
            .returning(_A.c.seq)
        ).scalar_one()
        return attempt.model_copy(update={"seq": seq})

    def attempts(self, invocation_id: str) -> list[Attempt]:
        query = (
            select(_A.c.seq, _A.c.doc).where(_A.c.invocation_id == invocation_id).order_by(_A.c.seq)
        )
        return [Attempt.model_validate({**r.doc, "seq": r.seq}) for r in self.conn.execute(query)]


def _partial(column: Column[str], value: str) -> ColumnElement[bool]:
    """``column = 'value'`` with the value in the SQL text, not a bound parameter: the
    predicate of a partial index must be a constant for PostgreSQL to prove a prepared
    statement's generic plan may use the index (psycopg prepares a statement after five
    runs; with a parameter the generic plan is a sequential scan)."""
    return column == literal_column(f"'{value}'")


_DUE = (
    select(_I.c.doc)
    .where(_partial(_I.c.status, "active"), _I.c.next_poll_at <= bindparam("key_now"))
    .order_by(_I.c.next_poll_at)
    .limit(bindparam("key_limit"))
)
"""Active invocations whose poll is due, soonest first, through ``ix_invocations_poll``."""
_EXPIRED = (
    select(_I.c.doc)
    .where(_partial(_I.c.status, "active"), _I.c.timeout_at <= bindparam("key_now"))
    .order_by(_I.c.timeout_at)
    .limit(bindparam("key_limit"))
)
"""Active invocations past their timeout, through ``ix_invocations_timeout``."""
_PENDING_NOTIFICATIONS = (
    select(_N.c.doc)
    .where(_partial(_N.c.outcome, "pending"))
    .order_by(_N.c.seq)
    .limit(bindparam("key_limit"))
)
"""Notifications not yet applied, oldest first, through ``ix_notifications_pending``."""
