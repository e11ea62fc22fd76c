"""`ShelfStore`: every table a dict on a named shelf in process memory.

A write transaction works on copies of the tables and puts them on the shelf when
it ends without an error, so a failed commit point leaves nothing behind; a read
transaction keeps the tables it found, so it is a snapshot. Lookups scan rows:
fine for a tutorial, not for millions of events.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any, ClassVar

from pydantic import BaseModel

from keep_sdk.errors import ActiveRunExists, MutationConflict
from keep_sdk.model import Event, EventStatus, LedgerEntry, RunRecord, RunStatus
from keep_sdk.stores import (
    AuditEntry,
    Clock,
    FaultHook,
    HandlerRecord,
    Lease,
    StoreCapability,
    Transaction,
    TransactionalStore,
    WorkflowRecord,
    WorkflowVersion,
    utc_now,
)

# --8<-- [start:tables]
KEYS: dict[str, Callable[[Any], Any]] = {
    "workflows": lambda r: r.name,
    "versions": lambda r: (r.workflow, r.version),
    "handlers": lambda r: (r.workflow, r.name),
    "events": lambda r: r.id,
    "runs": lambda r: r.id,
    "ledger": lambda r: r.id,
    "audit": lambda r: r.seq,
    "leases": lambda r: r.workflow,
}
"""Each table and the key of its rows. A dict keeps insertion order: publish order."""

Tables = dict[str, dict[Any, Any]]


class Shelf:
    """The tables of one store name, and the lock its writers take turns on."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.tables: Tables = {name: {} for name in KEYS}


SHELVES: dict[str, Shelf] = {}
"""Every shelf of this process by name: opening a name again finds its data."""
# --8<-- [end:tables]


# --8<-- [start:transaction]
class ShelfTransaction(Transaction):
    """The `Transaction` protocol over the tables one transaction sees."""

    def __init__(self, tables: Tables) -> None:
        self.t = tables

    def _put(self, table: str, row: BaseModel) -> None:
        self.t[table][KEYS[table](row)] = row

    # Workflows, versions, handlers

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

    # Events

    def event(self, event_id: str) -> Event | None:
        return self.t["events"].get(event_id)

    def events(self, workflow: str) -> Iterable[Event]:
        return [e for e in self.t["events"].values() if e.workflow == workflow]

    def events_by_keys(self, workflow: str, topic: str, message_ids: Sequence[str]) -> list[Event]:
        wanted = set(message_ids)
        return [e for e in self.events(workflow) if e.topic == topic and e.message_id in wanted]

    def pending_events(self, workflow: str, topic: str, limit: int) -> list[Event]:
        in_topic = (e for e in self.events(workflow) if e.topic == topic)
        return [e for e in in_topic if e.status is EventStatus.PENDING][:limit]

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

    # --8<-- [end:transaction]

    # Runs

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

    # The mutation ledger and the audit log

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

    # Leases

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


# --8<-- [start:store]
class ShelfStore(TransactionalStore):
    """A store on the shelf `name` of this process: data lives as long as the process."""

    capabilities: ClassVar[frozenset[StoreCapability]] = frozenset(
        {
            StoreCapability.PAGES,
            StoreCapability.COUNTS,
            StoreCapability.READING_SNAPSHOTS,
            StoreCapability.REOPEN,
            StoreCapability.FAULT_INJECTION,
        }
    )
    """Pages, counts and the fault hook come with `TransactionalStore`; a read transaction
    is a snapshot; opening a name again finds its shelf. Not declared: durable (the
    transactions implement no `DurableRows`) and processes (the shelf is in memory)."""

    def __init__(
        self, name: str, *, clock: Clock = utc_now, fault_hook: FaultHook | None = None
    ) -> None:
        super().__init__(clock=clock, fault_hook=fault_hook)
        self.shelf = SHELVES.setdefault(name, Shelf())

    @classmethod
    def from_url(cls, url: str, **options: Any) -> ShelfStore:
        """The store at ``shelf://NAME``; `options`: ``clock``, ``fault_hook``."""
        return cls(url.partition("://")[2] or "default", **options)

    @contextmanager
    def transaction(self, *, write: bool = True) -> Iterator[Transaction]:
        if not write:
            yield ShelfTransaction(self.shelf.tables)
            return
        with self.shelf.lock:
            work = {name: dict(rows) for name, rows in self.shelf.tables.items()}
            yield ShelfTransaction(work)
            self.shelf.tables = work

    def close(self) -> None:
        """Nothing to release: the shelf stays for the next store opened on its name."""


# --8<-- [end:store]
