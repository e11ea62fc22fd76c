"""An example third-party store: every table in one JSON file, built on the small protocol.

`JsonFileStore` implements only `transaction()` (and `close()`); all the commit
points, their checks, fault points and change listeners come from
`TransactionalStore`. A transaction works on a copy of the tables and, when it
committed a write, replaces the file atomically. Lookups scan the rows: fine for
a few thousand, which is what a file like this is for.
"""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from keep_sdk.errors import ActiveRunExists, MutationConflict
from keep_sdk.model import Event, EventStatus, LedgerEntry, RunRecord, RunStatus
from keep_sdk.stores import (
    AuditEntry,
    Clock,
    HandlerRecord,
    Lease,
    Transaction,
    TransactionalStore,
    WorkflowRecord,
    WorkflowVersion,
    utc_now,
)

__all__ = ["JsonFileStore"]

_TABLES: dict[str, tuple[type[BaseModel], Callable[[Any], Any]]] = {
    "workflows": (WorkflowRecord, lambda r: r.name),
    "versions": (WorkflowVersion, lambda r: (r.workflow, r.version)),
    "handlers": (HandlerRecord, lambda r: (r.workflow, r.name)),
    "events": (Event, lambda r: r.id),
    "runs": (RunRecord, lambda r: r.id),
    "ledger": (LedgerEntry, lambda r: r.id),
    "audit": (AuditEntry, lambda r: r.seq),
    "leases": (Lease, lambda r: r.workflow),
}
"""Table name: (row model, key of a row). Rows keep insertion order (publish order)."""

Tables = dict[str, dict[Any, Any]]


class _JsonTransaction(Transaction):
    def __init__(self, tables: Tables) -> None:
        self.t = tables

    def _put(self, table: str, row: BaseModel) -> None:
        self.t[table][_TABLES[table][1](row)] = row

    def workflow(self, name: str, *, lock: bool = False) -> WorkflowRecord | None:
        return self.t["workflows"].get(name)

    def workflows(self) -> Iterable[WorkflowRecord]:
        return list(self.t["workflows"].values())

    def insert_workflow(self, record: WorkflowRecord) -> None:
        self._put("workflows", record)

    def update_workflow(self, before: WorkflowRecord, after: WorkflowRecord) -> None:
        self._put("workflows", after)

    def version(self, workflow: str, version: int) -> WorkflowVersion | None:
        return self.t["versions"].get((workflow, version))

    def insert_version(self, version: WorkflowVersion) -> None:
        self._put("versions", version)

    def handler(self, workflow: str, name: str) -> HandlerRecord | None:
        return self.t["handlers"].get((workflow, name))

    def handlers(self, workflow: str | None = None) -> Iterable[HandlerRecord]:
        return [h for h in self.t["handlers"].values() if workflow in (None, h.workflow)]

    def insert_handler(self, record: HandlerRecord) -> None:
        self._put("handlers", record)

    def update_handler(self, before: HandlerRecord, after: HandlerRecord) -> None:
        self._put("handlers", after)

    def event(self, event_id: str) -> Event | None:
        return self.t["events"].get(event_id)

    def events_by_keys(self, workflow: str, topic: str, message_ids: Sequence[str]) -> list[Event]:
        wanted = set(message_ids)
        return [e for e in self.events(workflow) if e.topic == topic and e.message_id in wanted]

    def events(self, workflow: str) -> Iterable[Event]:
        return [e for e in self.t["events"].values() if e.workflow == workflow]

    def pending_events(self, workflow: str, topic: str, limit: int) -> list[Event]:
        pending = (e for e in self.events(workflow) if e.topic == topic)
        return [e for e in pending if e.status is EventStatus.PENDING][:limit]

    def reserved_events(self, run_id: str) -> list[Event]:
        held = (e for e in self.t["events"].values() if e.reserved_by == run_id)
        return [e for e in held if e.status is EventStatus.RESERVED]

    def insert_event(self, event: Event) -> bool:
        if self.events_by_keys(event.workflow, event.topic, [event.message_id]):
            return False
        self._put("events", event)
        return True

    def update_event(self, before: Event, after: Event) -> bool:
        stored = self.t["events"][before.id]
        if (stored.status, stored.reserved_by) != (before.status, before.reserved_by):
            return False
        self._put("events", after)
        return True

    def run(self, run_id: str) -> RunRecord | None:
        return self.t["runs"].get(run_id)

    def runs(self) -> Iterable[RunRecord]:
        return list(self.t["runs"].values())

    def active_run(self, workflow: str) -> str | None:
        active = (r for r in self.runs() if r.workflow == workflow)
        return next((r.id for r in active if r.status is RunStatus.ACTIVE), None)

    def insert_run(self, run: RunRecord) -> None:
        self._write_run(run)

    def update_run(self, before: RunRecord, after: RunRecord) -> bool:
        stored = self.t["runs"][before.id]
        if (stored.status, stored.phase) != (before.status, before.phase):
            return False
        self._write_run(after)
        return True

    def _write_run(self, run: RunRecord) -> None:
        holder = self.active_run(run.workflow)
        if run.status is RunStatus.ACTIVE and holder not in (None, run.id):
            raise ActiveRunExists(f"workflow {run.workflow!r} already has an active run ({holder})")
        self._put("runs", run)

    def ledger_entry(self, ledger_id: str) -> LedgerEntry | None:
        return self.t["ledger"].get(ledger_id)

    def ledger_entry_for_run(self, run_id: str) -> LedgerEntry | None:
        return next((e for e in self.t["ledger"].values() if e.run_id == run_id), None)

    def ledger_entries(self) -> Iterable[LedgerEntry]:
        return list(self.t["ledger"].values())

    def insert_ledger_entry(self, entry: LedgerEntry) -> None:
        if self.ledger_entry_for_run(entry.run_id) is not None:
            raise MutationConflict(f"run {entry.run_id} already recorded its one mutation")
        self._put("ledger", entry)

    def update_ledger_entry(self, before: LedgerEntry, after: LedgerEntry) -> bool:
        if self.t["ledger"][before.id].status is not before.status:
            return False
        self._put("ledger", after)
        return True

    def append_audit(self, entry: AuditEntry) -> AuditEntry:
        stored = entry.model_copy(update={"seq": len(self.t["audit"]) + 1})
        self._put("audit", stored)
        return stored

    def audit_entries(self, after_seq: int) -> Iterable[AuditEntry]:
        return [a for a in self.t["audit"].values() if a.seq > after_seq]

    def lease(self, workflow: str) -> Lease | None:
        return self.t["leases"].get(workflow)

    def leases(self) -> Iterable[Lease]:
        return [self.t["leases"][name] for name in sorted(self.t["leases"])]

    def insert_lease(self, lease: Lease) -> bool:
        if lease.workflow in self.t["leases"]:
            return False
        self._put("leases", lease)
        return True

    def update_lease(self, before: Lease, after: Lease) -> bool:
        if self.t["leases"].get(before.workflow) != before:
            return False
        self._put("leases", after)
        return True


class JsonFileStore(TransactionalStore):
    """A store in the JSON file `path` (created on the first write); one process at a time."""

    def __init__(self, path: Path, *, clock: Clock = utc_now) -> None:
        super().__init__(clock=clock)
        self.path = path
        self._lock = threading.Lock()
        self._tables = self._load()

    def _load(self) -> Tables:
        data = json.loads(self.path.read_text()) if self.path.exists() else {}
        return {
            name: {key(row): row for row in map(model.model_validate, data.get(name, []))}
            for name, (model, key) in _TABLES.items()
        }

    def _save(self, tables: Tables) -> None:
        data = {
            name: [row.model_dump(mode="json", by_alias=True) for row in rows.values()]
            for name, rows in tables.items()
        }
        scratch = self.path.with_suffix(".tmp")
        scratch.write_text(json.dumps(data))
        os.replace(scratch, self.path)

    @contextmanager
    def transaction(self, *, write: bool = True) -> Iterator[Transaction]:
        with self._lock:
            work = {name: dict(rows) for name, rows in self._tables.items()}
            yield _JsonTransaction(work)
            if write:
                self._save(work)
                self._tables = work

    def close(self) -> None:
        """Nothing to release: every commit is already in the file."""
