"""`SqlTransaction`: the `Transaction` rows of the SQL store, on one connection.

Inside a PostgreSQL write transaction every row a commit point reads is locked
(``SELECT … FOR UPDATE``); SQLite's ``BEGIN IMMEDIATE`` already holds the write
lock. Conditional updates check their row counts.
"""

from __future__ import annotations

import datetime as dt
import importlib
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from pydantic import TypeAdapter
from sqlalchemy import Connection, Select, delete, insert, select, update

from keep_sdk.model import Event, EventStatus, HandlerKind, LedgerEntry, RunRecord, trusted
from keep_sdk.stores._models import (
    AuditEntry,
    HandlerRecord,
    HandlerSpec,
    Lease,
    WorkflowRecord,
    WorkflowVersion,
)
from keep_sdk.stores._transaction import Transaction
from keep_sdk.stores.sql import _rows as rows
from keep_sdk.stores.sql import _schema as t
from keep_sdk.stores.sql import _statements as q
from keep_sdk.stores.sql._durable import SqlDurableRows
from keep_sdk.stores.sql._fast import FastConnection, StatementCache

__all__ = ["SqlTransaction"]

_HANDLER_SPECS: TypeAdapter[list[HandlerSpec]] = TypeAdapter(list[HandlerSpec])
_HANDLER_COLUMNS = ("kind", "version", "has_state", "state", "wake_at", "next_run_at", "updated_at")


class SqlTransaction(SqlDurableRows, Transaction):
    """Rows of the ``keep_*`` tables through `conn`, inside its open transaction."""

    def __init__(
        self,
        conn: Connection,
        *,
        dialect: str,
        write: bool,
        statements: StatementCache | None = None,
    ) -> None:
        self.conn = conn
        self.fast = FastConnection(conn, statements or StatementCache(conn.dialect))
        """The hot constant statements of `_statements`, run on the DBAPI cursor."""
        self.dialect = dialect
        self._lock = write and dialect == "postgresql"
        self.newest_intent: int | None = None
        """The ``seq`` of the ledger row this transaction inserted (SQLite), for the commit
        mark; None when it inserted none."""

    def _pick(self, lookup: q.Lookup) -> Select[Any]:
        plain, for_update = lookup
        return for_update if self._lock else plain

    def _insert(self, table: Any) -> Any:
        name = "postgresql" if self.dialect == "postgresql" else "sqlite"
        return importlib.import_module(f"sqlalchemy.dialects.{name}").insert(table)

    # Workflows

    def workflow(self, name: str, *, lock: bool = False) -> WorkflowRecord | None:
        query = q.WORKFLOW_BY_NAME[1 if lock and self._lock else 0]
        found = _workflows(self.fast.execute(query, {"key_name": name}).all())
        return found[0] if found else None

    def workflows(self) -> Iterable[WorkflowRecord]:
        return _workflows(self.fast.execute(q.WORKFLOWS).all())

    def insert_workflow(self, record: WorkflowRecord) -> None:
        self.conn.execute(insert(t.workflows).values(**record.model_dump(exclude={"grants"})))
        self._grant(record.name, record.grants, record.updated_at)

    def update_workflow(self, before: WorkflowRecord, after: WorkflowRecord) -> None:
        self.conn.execute(
            update(t.workflows)
            .where(t.workflows.c.name == before.name)
            .values(version=after.version, paused=after.paused, updated_at=after.updated_at)
        )
        self._grant(after.name, sorted(set(after.grants) - set(before.grants)), after.updated_at)
        revoked = set(before.grants) - set(after.grants)
        if revoked:
            self.conn.execute(
                delete(t.grants).where(
                    t.grants.c.workflow == after.name, t.grants.c.permission.in_(revoked)
                )
            )

    def _grant(self, workflow: str, permissions: Sequence[str], at: dt.datetime) -> None:
        if permissions:
            self.conn.execute(
                insert(t.grants),
                [{"workflow": workflow, "permission": p, "granted_at": at} for p in permissions],
            )

    def version(self, workflow: str, version: int) -> WorkflowVersion | None:
        row = self.conn.execute(
            select(t.workflow_versions).where(
                t.workflow_versions.c.workflow == workflow,
                t.workflow_versions.c.version == version,
            )
        ).first()
        if row is None:
            return None
        return WorkflowVersion(
            workflow=workflow,
            version=version,
            source=row.source,
            manifest=row.manifest,
            handlers=_HANDLER_SPECS.validate_python(row.handlers),
            created_at=row.created_at,
        )

    def insert_version(self, version: WorkflowVersion) -> None:
        values = version.model_dump(exclude={"handlers"})
        handlers = [rows.dump(h) for h in version.handlers]
        self.conn.execute(insert(t.workflow_versions).values(**values, handlers=handlers))

    # Handlers

    def handler(self, workflow: str, name: str) -> HandlerRecord | None:
        found = self.fast.execute(
            self._pick(q.HANDLER_BY_KEY), {"key_workflow": workflow, "key_name": name}
        ).all()
        if not found:
            return None
        return _handler(found[0], [r.topic for r in found if r.topic is not None])

    def handlers(self, workflow: str | None = None) -> Iterable[HandlerRecord]:
        conditions = [] if workflow is None else [t.handlers.c.workflow == workflow]
        return self.handler_records(*conditions)

    def handler_records(self, *conditions: Any) -> list[HandlerRecord]:
        """Handlers matching `conditions` on ``keep_handlers``, by workflow and name."""
        found = self.conn.execute(
            select(t.handlers).where(*conditions).order_by(t.handlers.c.workflow, t.handlers.c.name)
        ).all()
        return self.with_subscriptions(found)

    def due_producers(self, now: dt.datetime) -> list[HandlerRecord]:
        """Current producers of unpaused workflows due at `now`, by workflow and name."""
        return self.with_subscriptions(self.fast.execute(q.DUE_PRODUCERS, {"key_now": now}).all())

    def with_subscriptions(self, found: Sequence[Any]) -> list[HandlerRecord]:
        """The handler records of ``keep_handlers`` rows, with their subscribed topics."""
        subs: dict[tuple[str, str], list[str]] = {}
        if found:
            names = {r.workflow for r in found}
            for sub in self.conn.execute(
                select(t.subscriptions)
                .where(t.subscriptions.c.workflow.in_(names))
                .order_by(t.subscriptions.c.topic)
            ):
                subs.setdefault((sub.workflow, sub.handler), []).append(sub.topic)
        return [_handler(r, subs.get((r.workflow, r.name), [])) for r in found]

    def insert_handler(self, record: HandlerRecord) -> None:
        values = {c: getattr(record, c) for c in _HANDLER_COLUMNS}
        values["kind"] = record.kind.value
        self.conn.execute(
            insert(t.handlers).values(workflow=record.workflow, name=record.name, **values)
        )
        self._subscribe(record)

    def update_handler(self, before: HandlerRecord, after: HandlerRecord) -> None:
        changed = {
            c: getattr(after, c)
            for c in _HANDLER_COLUMNS
            if getattr(after, c) != getattr(before, c)
        }
        if "kind" in changed:
            changed["kind"] = after.kind.value
        if changed:
            self.fast.execute(
                q.WRITE_HANDLER, {"was_workflow": after.workflow, "was_name": after.name, **changed}
            )
        if after.subscribe != before.subscribe:
            self.conn.execute(
                delete(t.subscriptions).where(
                    t.subscriptions.c.workflow == after.workflow,
                    t.subscriptions.c.handler == after.name,
                )
            )
            self._subscribe(after)

    def write_handler(self, workflow: str, name: str, changes: Mapping[str, Any]) -> bool:
        done = self.fast.execute(
            q.WRITE_HANDLER, {"was_workflow": workflow, "was_name": name, **changes}
        )
        return done.rowcount == 1

    def _subscribe(self, record: HandlerRecord) -> None:
        if record.subscribe:
            self.conn.execute(
                insert(t.subscriptions),
                [
                    {"workflow": record.workflow, "handler": record.name, "topic": topic}
                    for topic in record.subscribe
                ],
            )

    # Events

    def event(self, event_id: str) -> Event | None:
        row = self.fast.execute(self._pick(q.EVENT_BY_ID), {"key_id": event_id}).first()
        return rows.event(row) if row is not None else None

    def events_by_keys(self, workflow: str, topic: str, message_ids: Sequence[str]) -> list[Event]:
        lookup, ids = q.events_by_message_ids(message_ids)
        found = self.fast.execute(
            self._pick(lookup), {"key_workflow": workflow, "key_topic": topic, **ids}
        ).all()
        return [rows.event(r) for r in found]

    def events(self, workflow: str) -> Iterable[Event]:
        query = select(t.events).where(t.events.c.workflow == workflow).order_by(t.events.c.seq)
        return [rows.event(r) for r in self.conn.execute(query)]

    def pending_events(self, workflow: str, topic: str, limit: int) -> list[Event]:
        found = self.fast.execute(
            q.PENDING_EVENTS, {"key_workflow": workflow, "key_topic": topic, "key_limit": limit}
        )
        return [rows.event(r) for r in found]

    def reserved_events(self, run_id: str) -> list[Event]:
        found = self.fast.execute(self._pick(q.RESERVED_BY_RUN), {"key_run": run_id})
        return [rows.event(r) for r in found]

    def insert_event(self, event: Event) -> bool:
        inserted = self.fast.execute(q.insert_event(self.dialect), rows.event_values(event)).first()
        return inserted is not None

    def update_event(self, before: Event, after: Event) -> bool:
        values = rows.event_values(after)
        for fixed in ("id", "workflow", "topic", "message_id", "created_by", "created_at"):
            values.pop(fixed)
        done = self.fast.execute(
            q.WRITE_EVENT,
            {
                "was_id": before.id,
                "was_status": before.status.value,
                "was_reserved_by": before.reserved_by,
                **values,
            },
        )
        return done.rowcount == 1

    def reserve_events(
        self, run_id: str, workflow: str, topic: str, message_ids: Sequence[str], at: dt.datetime
    ) -> int:
        statement, ids = q.reserve_events(message_ids)
        done = self.fast.execute(
            statement,
            {
                "key_workflow": workflow,
                "key_topic": topic,
                "key_run": run_id,
                "status": EventStatus.RESERVED.value,
                "reserved_by": run_id,
                "updated_at": at,
                **ids,
            },
        )
        return done.rowcount

    def finish_reservations(self, run_id: str, status: EventStatus, at: dt.datetime) -> int:
        done = self.fast.execute(
            q.FINISH_RESERVATIONS, {"key_run": run_id, "status": status.value, "updated_at": at}
        )
        return done.rowcount

    # Runs

    def run(self, run_id: str) -> RunRecord | None:
        row = self.fast.execute(self._pick(q.RUN_BY_ID), {"key_id": run_id}).first()
        return rows.run(row) if row is not None else None

    def runs(self) -> Iterable[RunRecord]:
        return [rows.run(r) for r in self.conn.execute(select(t.runs).order_by(t.runs.c.seq))]

    def active_run(self, workflow: str) -> str | None:
        found: str | None = self.fast.execute(q.ACTIVE_RUN, {"key_workflow": workflow}).scalar()
        return found

    def insert_run(self, run: RunRecord) -> None:
        self.fast.execute(
            q.INSERT_RUN,
            {
                "id": run.id,
                "workflow": run.workflow,
                "workflow_version": run.workflow_version,
                "handler": run.handler,
                "kind": run.kind.value,
                "retry_of": run.retry_of,
                "input_state": run.input_state,
                "created_at": run.created_at,
                **rows.run_values(run),
            },
        )

    def update_run(self, before: RunRecord, after: RunRecord) -> bool:
        values = rows.changed_run_values(before, after)
        done = self.fast.execute(
            q.WRITE_RUN,
            {
                "was_id": before.id,
                "was_status": before.status.value,
                "was_phase": before.phase.value,
                **(values or {"status": after.status.value}),
            },
        )
        return done.rowcount == 1

    # The mutation ledger

    def ledger_entry(self, ledger_id: str) -> LedgerEntry | None:
        row = self.fast.execute(self._pick(q.LEDGER_BY_ID), {"key_id": ledger_id}).first()
        return rows.ledger_entry(row) if row is not None else None

    def ledger_entry_and_run(self, ledger_id: str) -> tuple[LedgerEntry | None, RunRecord | None]:
        row = self.fast.execute(self._pick(q.LEDGER_WITH_RUN), {"key_id": ledger_id}).first()
        if row is None:
            entry = self.ledger_entry(ledger_id)
            return entry, self.run(entry.run_id) if entry is not None else None
        return rows.ledger_entry(rows.split(row, "ledger_")), rows.run(rows.split(row, "run_"))

    def ledger_entry_for_run(self, run_id: str) -> LedgerEntry | None:
        row = self.fast.execute(self._pick(q.LEDGER_BY_RUN), {"key_run": run_id}).first()
        return rows.ledger_entry(row) if row is not None else None

    def ledger_entries(self) -> Iterable[LedgerEntry]:
        query = select(t.ledger).order_by(t.ledger.c.seq)
        return [rows.ledger_entry(r) for r in self.conn.execute(query)]

    def insert_ledger_entry(self, entry: LedgerEntry) -> None:
        done = self.fast.execute(q.INSERT_ENTRY, rows.entry_values(entry))
        if self.dialect == "sqlite":
            self.newest_intent = done.lastrowid

    def update_ledger_entry(self, before: LedgerEntry, after: LedgerEntry) -> bool:
        values = rows.entry_values(after)
        for fixed in ("id", "run_id", "workflow", "handler", "created_at"):
            values.pop(fixed)
        values = rows.written(before, after, values) or {"status": values["status"]}
        done = self.fast.execute(
            q.WRITE_ENTRY, {"was_id": before.id, "was_status": before.status.value, **values}
        )
        return done.rowcount == 1

    # Audit

    def append_audit(self, entry: AuditEntry) -> AuditEntry:
        seq = self.conn.execute(
            insert(t.audit).values(**entry.model_dump(exclude={"seq"})).returning(t.audit.c.seq)
        ).scalar_one()
        return entry.model_copy(update={"seq": seq})

    def audit_entries(self, after_seq: int) -> Iterable[AuditEntry]:
        query = select(t.audit).where(t.audit.c.seq > after_seq).order_by(t.audit.c.seq)
        return [rows.audit_entry(r) for r in self.conn.execute(query)]

    # Leases

    def lease(self, workflow: str) -> Lease | None:
        query = select(t.leases).where(t.leases.c.workflow == workflow)
        return rows.lease(self.conn.execute(query).first())

    def leases(self) -> Iterable[Lease]:
        return [lease for row in self.fast.execute(q.LEASES) if (lease := rows.lease(row))]

    def insert_lease(self, lease: Lease) -> bool:
        inserted = self.conn.execute(
            self._insert(t.leases)
            .values(**lease.model_dump())
            .on_conflict_do_nothing()
            .returning(t.leases.c.token)
        ).first()
        return inserted is not None

    def update_lease(self, before: Lease, after: Lease) -> bool:
        done = self.conn.execute(
            update(t.leases)
            .where(
                t.leases.c.workflow == before.workflow,
                t.leases.c.token == before.token,
                t.leases.c.owner == before.owner,
                t.leases.c.expires_at == before.expires_at,
            )
            .values(**after.model_dump(exclude={"workflow"}))
        )
        return done.rowcount == 1


def _workflows(found: Sequence[Any]) -> list[WorkflowRecord]:
    """Workflow records from rows of workflows joined with their grants (one per grant)."""
    grants: dict[str, list[str]] = {}
    first: dict[str, Any] = {}
    for row in found:
        first.setdefault(row.name, row)
        permissions = grants.setdefault(row.name, [])
        if row.permission is not None:
            permissions.append(row.permission)
    return [
        trusted(
            WorkflowRecord,
            {
                "name": row.name,
                "version": row.version,
                "paused": row.paused,
                "grants": grants[name],
                "created_at": row.created_at,
                "updated_at": row.updated_at,
            },
        )
        for name, row in first.items()
    ]


def _handler(row: Any, subscribe: list[str]) -> HandlerRecord:
    return trusted(
        HandlerRecord,
        {
            "workflow": row.workflow,
            "name": row.name,
            "kind": HandlerKind(row.kind),
            "version": row.version,
            "subscribe": subscribe,
            "has_state": row.has_state,
            "state": row.state,
            "wake_at": row.wake_at,
            "next_run_at": row.next_run_at,
            "updated_at": row.updated_at,
        },
    )
