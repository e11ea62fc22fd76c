"""The in-memory reference store: dicts of rows, one lock, an undo log per transaction.

The commit points are `TransactionalStore`'s; this module only keeps rows. A
transaction holds the store's lock from start to end and remembers the old value
of every row it writes; if the block raises (the fault hook included) the old
values are written back in reverse order. Derived lookups (event keys, pending
events per topic, reservations per run, the active run per workflow, the ledger
entry per run) are recomputed from each row written, so undoing a write undoes
them too.
"""

from __future__ import annotations

import bisect
import datetime as dt
import threading
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any, ClassVar, TypeVar

from keep_sdk.errors import MutationConflict
from keep_sdk.model import Event, EventStatus, LedgerEntry, RunRecord, RunStatus
from keep_sdk.stores import _rules as rules
from keep_sdk.stores._capabilities import StoreCapability
from keep_sdk.stores._commit import TransactionalStore
from keep_sdk.stores._commit.work import require_workflow
from keep_sdk.stores._memory_durable import DurableTables, MemoryDurableRows
from keep_sdk.stores._models import (
    AuditEntry,
    HandlerRecord,
    Lease,
    WorkflowRecord,
    WorkflowVersion,
)
from keep_sdk.stores._protocol import Clock, FaultHook, utc_now
from keep_sdk.stores._transaction import Transaction

__all__ = ["MemoryStore"]

_K = TypeVar("_K")
_V = TypeVar("_V")


class _Tables:
    """The rows, and lookups derived from them by `set_event`, `set_run`, `set_entry`."""

    def __init__(self) -> None:
        self.workflows: dict[str, WorkflowRecord] = {}
        self.versions: dict[tuple[str, int], WorkflowVersion] = {}
        self.handlers: dict[tuple[str, str], HandlerRecord] = {}
        self.events: dict[str, Event] = {}
        self.runs: dict[str, RunRecord] = {}
        self.ledger: dict[str, LedgerEntry] = {}
        self.audit: list[AuditEntry] = []
        self.leases: dict[str, Lease] = {}
        self.next_seq = 1
        self.seq: dict[str, int] = {}
        self.event_keys: dict[tuple[str, str, str], str] = {}
        self.pending: dict[tuple[str, str], list[tuple[int, str]]] = {}
        self.reserved: dict[str, dict[str, None]] = {}
        self.active: dict[str, str] = {}
        self.ledger_by_run: dict[str, str] = {}
        self.durable = DurableTables()

    def set_event(self, event_id: str, event: Event | None) -> None:
        """Store `event` under `event_id` (None removes it), keeping the lookups in step."""
        old = self.events.get(event_id)
        if old is not None:
            self._unindex(old)
        if event is None:
            if old is not None:
                del self.events[event_id], self.seq[event_id]
                del self.event_keys[(old.workflow, old.topic, old.message_id)]
            return
        if old is None:
            self.seq[event_id] = self.next_seq
            self.next_seq += 1
            self.event_keys[(event.workflow, event.topic, event.message_id)] = event_id
        self.events[event_id] = event
        if event.status is EventStatus.PENDING:
            queue = self.pending.setdefault((event.workflow, event.topic), [])
            bisect.insort(queue, self._at(event))
        if event.status is EventStatus.RESERVED:
            self.reserved.setdefault(str(event.reserved_by), {})[event_id] = None

    def _at(self, event: Event) -> tuple[int, str]:
        return (self.seq[event.id], event.id)

    def _unindex(self, event: Event) -> None:
        if event.status is EventStatus.PENDING:
            queue = self.pending[(event.workflow, event.topic)]
            del queue[bisect.bisect_left(queue, self._at(event))]
        if event.status is EventStatus.RESERVED:
            held = self.reserved[str(event.reserved_by)]
            del held[event.id]
            if not held:
                del self.reserved[str(event.reserved_by)]

    def set_run(self, run_id: str, run: RunRecord | None) -> None:
        """Store `run` (None removes it); refuses a second active run in a workflow."""
        old = self.runs.get(run_id)
        was_active = old is not None and old.status is RunStatus.ACTIVE
        if run is not None and run.status is RunStatus.ACTIVE and not was_active:
            holder = self.active.get(run.workflow)
            if holder is not None:
                raise rules.active_run_exists(run.workflow, holder)
        if old is not None and was_active:
            del self.active[old.workflow]
        if run is None:
            del self.runs[run_id]
            return
        if run.status is RunStatus.ACTIVE:
            self.active[run.workflow] = run_id
        self.runs[run_id] = run

    def set_entry(self, ledger_id: str, entry: LedgerEntry | None) -> None:
        """Store `entry` (None removes it); at most one entry per run."""
        if entry is None:
            old = self.ledger.pop(ledger_id)
            del self.ledger_by_run[old.run_id]
            return
        holder = self.ledger_by_run.setdefault(entry.run_id, ledger_id)
        if holder != ledger_id:
            raise MutationConflict(f"run {entry.run_id} already recorded its one mutation")
        self.ledger[ledger_id] = entry


class _MemoryTransaction(MemoryDurableRows, Transaction):
    """Reads and writes `_Tables`, logging how to undo each write."""

    def __init__(self, tables: _Tables) -> None:
        self._t = tables
        self._durable = tables.durable
        self._undo: list[Callable[[], object]] = []

    def rollback(self) -> None:
        """Write back every old value, newest first."""
        for undo in reversed(self._undo):
            undo()
        self._undo.clear()

    def commit(self) -> None:
        """Keep the writes; drop the undo log (and the references it holds)."""
        self._undo.clear()

    def _put(self, table: dict[_K, _V], key: _K, value: _V) -> None:
        if key in table:
            old = table[key]
            self._undo.append(lambda: table.__setitem__(key, old))
        else:
            self._undo.append(lambda: table.pop(key))
        table[key] = value

    # Workflows

    def workflow(self, name: str, *, lock: bool = False) -> WorkflowRecord | None:
        return self._t.workflows.get(name)

    def workflows(self) -> Iterable[WorkflowRecord]:
        return list(self._t.workflows.values())

    def insert_workflow(self, record: WorkflowRecord) -> None:
        self._put(self._t.workflows, record.name, record)

    def update_workflow(self, before: WorkflowRecord, after: WorkflowRecord) -> None:
        self._put(self._t.workflows, after.name, after)

    def version(self, workflow: str, version: int) -> WorkflowVersion | None:
        return self._t.versions.get((workflow, version))

    def insert_version(self, version: WorkflowVersion) -> None:
        self._put(self._t.versions, (version.workflow, version.version), version)

    # Handlers

    def handler(self, workflow: str, name: str) -> HandlerRecord | None:
        return self._t.handlers.get((workflow, name))

    def handlers(self, workflow: str | None = None) -> Iterable[HandlerRecord]:
        return [h for h in self._t.handlers.values() if workflow in (None, h.workflow)]

    def insert_handler(self, record: HandlerRecord) -> None:
        self._put(self._t.handlers, (record.workflow, record.name), record)

    def update_handler(self, before: HandlerRecord, after: HandlerRecord) -> None:
        self._put(self._t.handlers, (after.workflow, after.name), after)

    def write_handler(self, workflow: str, name: str, changes: Mapping[str, Any]) -> bool:
        found = self._t.handlers.get((workflow, name))
        if found is None:
            return False
        self._put(self._t.handlers, (workflow, name), found.model_copy(update=dict(changes)))
        return True

    # Events

    def event(self, event_id: str) -> Event | None:
        return self._t.events.get(event_id)

    def events_by_keys(self, workflow: str, topic: str, message_ids: Sequence[str]) -> list[Event]:
        keys = self._t.event_keys
        found = (keys.get((workflow, topic, mid)) for mid in dict.fromkeys(message_ids))
        return [self._t.events[i] for i in found if i is not None]

    def events(self, workflow: str) -> Iterable[Event]:
        return [e for e in self._t.events.values() if e.workflow == workflow]

    def pending_events(self, workflow: str, topic: str, limit: int) -> list[Event]:
        queue = self._t.pending.get((workflow, topic), [])
        return [self._t.events[event_id] for _, event_id in queue[:limit]]

    def reserved_events(self, run_id: str) -> list[Event]:
        held = self._t.reserved.get(run_id, {})
        return sorted((self._t.events[i] for i in held), key=lambda e: self._t.seq[e.id])

    def insert_event(self, event: Event) -> bool:
        if (event.workflow, event.topic, event.message_id) in self._t.event_keys:
            return False
        self._set_event(event.id, event)
        return True

    def update_event(self, before: Event, after: Event) -> bool:
        stored = self._t.events.get(before.id)
        if stored is None or (stored.status, stored.reserved_by) != (
            before.status,
            before.reserved_by,
        ):
            return False
        self._set_event(after.id, after)
        return True

    def reserve_events(
        self, run_id: str, workflow: str, topic: str, message_ids: Sequence[str], at: dt.datetime
    ) -> int:
        reserved = 0
        for event in self.events_by_keys(workflow, topic, message_ids):
            held = event.status is EventStatus.RESERVED and event.reserved_by == run_id
            if event.status is EventStatus.PENDING or held:
                changes = {"status": EventStatus.RESERVED, "reserved_by": run_id, "updated_at": at}
                self._set_event(event.id, event.model_copy(update=changes))
                reserved += 1
        return reserved

    def finish_reservations(self, run_id: str, status: EventStatus, at: dt.datetime) -> int:
        held = self.reserved_events(run_id)
        for event in held:
            self._set_event(event.id, event.model_copy(update={"status": status, "updated_at": at}))
        return len(held)

    def _set_event(self, event_id: str, event: Event) -> None:
        old = self._t.events.get(event_id)
        self._t.set_event(event_id, event)
        self._undo.append(lambda: self._t.set_event(event_id, old))

    # Runs

    def run(self, run_id: str) -> RunRecord | None:
        return self._t.runs.get(run_id)

    def runs(self) -> Iterable[RunRecord]:
        return list(self._t.runs.values())

    def active_run(self, workflow: str) -> str | None:
        return self._t.active.get(workflow)

    def insert_run(self, run: RunRecord) -> None:
        self._set_run(run.id, run)

    def update_run(self, before: RunRecord, after: RunRecord) -> bool:
        stored = self._t.runs.get(before.id)
        if stored is None or (stored.status, stored.phase) != (before.status, before.phase):
            return False
        self._set_run(after.id, after)
        return True

    def _set_run(self, run_id: str, run: RunRecord) -> None:
        old = self._t.runs.get(run_id)
        self._t.set_run(run_id, run)
        self._undo.append(lambda: self._t.set_run(run_id, old))

    # The mutation ledger

    def ledger_entry(self, ledger_id: str) -> LedgerEntry | None:
        return self._t.ledger.get(ledger_id)

    def ledger_entry_and_run(self, ledger_id: str) -> tuple[LedgerEntry | None, RunRecord | None]:
        entry = self._t.ledger.get(ledger_id)
        return entry, self._t.runs.get(entry.run_id) if entry is not None else None

    def ledger_entry_for_run(self, run_id: str) -> LedgerEntry | None:
        ledger_id = self._t.ledger_by_run.get(run_id)
        return self._t.ledger[ledger_id] if ledger_id else None

    def ledger_entries(self) -> Iterable[LedgerEntry]:
        return list(self._t.ledger.values())

    def insert_ledger_entry(self, entry: LedgerEntry) -> None:
        self._set_entry(entry.id, entry)

    def update_ledger_entry(self, before: LedgerEntry, after: LedgerEntry) -> bool:
        stored = self._t.ledger.get(before.id)
        if stored is None or stored.status is not before.status:
            return False
        self._set_entry(after.id, after)
        return True

    def _set_entry(self, ledger_id: str, entry: LedgerEntry) -> None:
        old = self._t.ledger.get(ledger_id)
        self._t.set_entry(ledger_id, entry)
        self._undo.append(lambda: self._t.set_entry(ledger_id, old))

    # Audit

    def append_audit(self, entry: AuditEntry) -> AuditEntry:
        stored = entry.model_copy(update={"seq": len(self._t.audit) + 1})
        self._t.audit.append(stored)
        self._undo.append(self._t.audit.pop)
        return stored

    def audit_entries(self, after_seq: int) -> Iterable[AuditEntry]:
        return self._t.audit[after_seq:]

    # Leases

    def lease(self, workflow: str) -> Lease | None:
        return self._t.leases.get(workflow)

    def leases(self) -> Iterable[Lease]:
        return [self._t.leases[name] for name in sorted(self._t.leases)]

    def insert_lease(self, lease: Lease) -> bool:
        if lease.workflow in self._t.leases:
            return False
        self._put(self._t.leases, lease.workflow, lease)
        return True

    def update_lease(self, before: Lease, after: Lease) -> bool:
        if self._t.leases.get(before.workflow) != before:
            return False
        self._put(self._t.leases, after.workflow, after)
        return True


class MemoryStore(TransactionalStore):
    """A `Store` kept in process memory; lost when the process ends.

    Thread-safe: one lock serializes every transaction. `clock` supplies the
    time (aware UTC); `fault_hook`, when set, is called with a `FaultPoint`
    between the writes of every commit point.
    """

    capabilities: ClassVar[frozenset[StoreCapability]] = frozenset(StoreCapability) - {
        StoreCapability.PROCESSES,
        StoreCapability.REOPEN,
    }
    """Everything but what needs the data outside this object (another process, a reopen)."""

    def __init__(self, *, clock: Clock = utc_now, fault_hook: FaultHook | None = None) -> None:
        super().__init__(clock=clock, fault_hook=fault_hook)
        self._lock = threading.RLock()
        self._tables = _Tables()
        self._closed = False

    @contextmanager
    def transaction(self, *, write: bool = True) -> Iterator[Transaction]:
        with self._lock:
            if self._closed:
                raise RuntimeError("the store is closed")
            tx = _MemoryTransaction(self._tables)
            try:
                yield tx
            except BaseException:
                tx.rollback()
                raise
            tx.commit()

    def close(self) -> None:
        with self._lock:
            self._closed = True

    def peek_cost(self, workflow: str, topic: str, *, limit: int) -> int:
        """Index entries `pending_events` reads: at most `limit`."""
        with self._lock:
            return len(self._tables.pending.get((workflow, topic), [])[:limit])

    def bulk_load_events(self, workflow: str, events: Sequence[Event]) -> None:
        """Insert `events` as given (status included), bypassing publish; one transaction.
        `ValueError` when one belongs to another workflow, nothing loaded."""
        rules.refuse_foreign_events(workflow, events)
        with self.transaction() as tx:
            require_workflow(tx, workflow)
            for event in events:
                tx.insert_event(event)
