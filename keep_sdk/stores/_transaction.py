"""The small protocol a store implements to get every commit point for free.

A `Transaction` reads and writes rows of the store's tables inside one atomic
unit: `TransactionalStore.transaction()` opens it, commits it when the block
ends normally and rolls everything back when the block raises. The commit
points (`keep_sdk.stores.TransactionalStore`) are written once over it.

Rows are the store's models (`WorkflowRecord`, `Event`, `RunRecord`...). A
conditional update (`update_run(before, after)` and the like) writes `after`
only while the stored row still matches `before` in the fields named in its
docstring, and says with its return value whether it did; a store that
serializes its transactions (one lock, SQLite's write lock) can simply write
and return True. A transaction opened with ``write=False`` is only read.

A few writes (`reserve_events`, `finish_reservations`, `write_handler`) change
rows the commit point has not read and report how many they changed; their
default bodies are built on the methods above, and a database overrides them with
one conditional ``UPDATE`` each.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Protocol

from keep_sdk.model import Event, EventStatus, LedgerEntry, RunRecord
from keep_sdk.stores._models import (
    AuditEntry,
    HandlerRecord,
    Lease,
    WorkflowRecord,
    WorkflowVersion,
)

__all__ = ["Transaction"]


class Transaction(Protocol):
    """Row access inside one transaction. Lookups return None for a missing row."""

    # Workflows

    def workflow(self, name: str, *, lock: bool = False) -> WorkflowRecord | None:
        """The workflow `name` with its grants; `lock`: no other transaction may change it
        until this one ends (``SELECT … FOR UPDATE``)."""
        ...

    def workflows(self) -> Iterable[WorkflowRecord]:
        """Every workflow, any order."""
        ...

    def insert_workflow(self, record: WorkflowRecord) -> None:
        """Add a new workflow (its name is not taken)."""
        ...

    def update_workflow(self, before: WorkflowRecord, after: WorkflowRecord) -> None:
        """Write `after` (version, paused, grants, updated_at) over the workflow read as
        `before`."""
        ...

    def version(self, workflow: str, version: int) -> WorkflowVersion | None:
        """One deployed version of the workflow."""
        ...

    def insert_version(self, version: WorkflowVersion) -> None:
        """Add a new version (versions never change)."""
        ...

    # Handlers

    def handler(self, workflow: str, name: str) -> HandlerRecord | None:
        """The handler `name` of the workflow."""
        ...

    def handlers(self, workflow: str | None = None) -> Iterable[HandlerRecord]:
        """Handlers of one workflow, or of all, any order."""
        ...

    def insert_handler(self, record: HandlerRecord) -> None:
        """Add a handler the workflow never declared before."""
        ...

    def update_handler(self, before: HandlerRecord, after: HandlerRecord) -> None:
        """Write `after` over the handler read as `before`."""
        ...

    def write_handler(self, workflow: str, name: str, changes: Mapping[str, Any]) -> bool:
        """Set the fields `changes` (of state, has_state, wake_at, next_run_at, updated_at)
        on the handler `name` of the workflow without reading it first; False (nothing
        written) when there is no such handler."""
        found = self.handler(workflow, name)
        if found is None:
            return False
        self.update_handler(found, found.model_copy(update=dict(changes)))
        return True

    # Events

    def event(self, event_id: str) -> Event | None:
        """The event with host id `event_id`."""
        ...

    def events_by_keys(self, workflow: str, topic: str, message_ids: Sequence[str]) -> list[Event]:
        """The events of the topic with these messageIds (unknown ones left out), any order."""
        ...

    def events(self, workflow: str) -> Iterable[Event]:
        """Every event of the workflow in publish order."""
        ...

    def pending_events(self, workflow: str, topic: str, limit: int) -> list[Event]:
        """Up to `limit` pending events of the topic in publish order; the cost must not
        grow with the topic's consumed events."""
        ...

    def reserved_events(self, run_id: str) -> list[Event]:
        """The events reserved by run `run_id` (status reserved), in publish order."""
        ...

    def insert_event(self, event: Event) -> bool:
        """Add `event`, assigning the next position in publish order; False (and nothing
        written) when its (workflow, topic, messageId) exists already."""
        ...

    def update_event(self, before: Event, after: Event) -> bool:
        """Write `after` if the stored event still has the status and reserved_by of
        `before`; whether it did."""
        ...

    def reserve_events(
        self, run_id: str, workflow: str, topic: str, message_ids: Sequence[str], at: dt.datetime
    ) -> int:
        """Reserve for run `run_id` the topic's events with these distinct messageIds that
        are pending or reserved by that run already (status reserved, reserved_by
        `run_id`, updated_at `at`), leaving the others alone; how many it reserved. Fewer
        than `message_ids` means some are missing or taken: the caller reads them to say
        which, and rolls back."""
        reserved = 0
        for event in self.events_by_keys(workflow, topic, message_ids):
            held = event.status is EventStatus.RESERVED and event.reserved_by == run_id
            if event.status is EventStatus.PENDING or held:
                after = event.model_copy(
                    update={"status": EventStatus.RESERVED, "reserved_by": run_id, "updated_at": at}
                )
                reserved += self.update_event(event, after)
        return reserved

    def finish_reservations(self, run_id: str, status: EventStatus, at: dt.datetime) -> int:
        """Set every event run `run_id` holds (status reserved, reserved_by `run_id`) to
        `status` (consumed or skipped; reserved_by kept), updated_at `at`; how many."""
        finished = 0
        for event in self.reserved_events(run_id):
            after = event.model_copy(update={"status": status, "updated_at": at})
            finished += self.update_event(event, after)
        return finished

    # Runs

    def run(self, run_id: str) -> RunRecord | None:
        """The run `run_id`."""
        ...

    def runs(self) -> Iterable[RunRecord]:
        """Every run in creation order."""
        ...

    def active_run(self, workflow: str) -> str | None:
        """The id of the workflow's active run."""
        ...

    def insert_run(self, run: RunRecord) -> None:
        """Add a new run. A second active run in a workflow must raise `ActiveRunExists`
        (the database may enforce it)."""
        ...

    def update_run(self, before: RunRecord, after: RunRecord) -> bool:
        """Write `after` if the stored run still has the status and phase of `before`;
        whether it did. A second active run raises `ActiveRunExists`."""
        ...

    # The mutation ledger

    def ledger_entry(self, ledger_id: str) -> LedgerEntry | None:
        """The ledger entry `ledger_id`."""
        ...

    def ledger_entry_and_run(self, ledger_id: str) -> tuple[LedgerEntry | None, RunRecord | None]:
        """The ledger entry `ledger_id` and the run it belongs to (None for what is
        missing), read together: a database answers both with one statement."""
        entry = self.ledger_entry(ledger_id)
        return entry, self.run(entry.run_id) if entry is not None else None

    def ledger_entry_for_run(self, run_id: str) -> LedgerEntry | None:
        """The ledger entry of run `run_id`."""
        ...

    def ledger_entries(self) -> Iterable[LedgerEntry]:
        """Every ledger entry in creation order."""
        ...

    def insert_ledger_entry(self, entry: LedgerEntry) -> None:
        """Add a new entry. A second entry for a run must raise `MutationConflict`."""
        ...

    def update_ledger_entry(self, before: LedgerEntry, after: LedgerEntry) -> bool:
        """Write `after` if the stored entry still has the status of `before`; whether it did."""
        ...

    # Audit

    def append_audit(self, entry: AuditEntry) -> AuditEntry:
        """Append `entry` under the next seq (increasing from 1) in place of its own; return
        it as stored."""
        ...

    def audit_entries(self, after_seq: int) -> Iterable[AuditEntry]:
        """Audit entries with seq > `after_seq`, oldest first."""
        ...

    # Leases

    def lease(self, workflow: str) -> Lease | None:
        """The workflow's lease row (perhaps expired)."""
        ...

    def leases(self) -> Iterable[Lease]:
        """Every lease row (perhaps expired), in any order."""
        ...

    def insert_lease(self, lease: Lease) -> bool:
        """Add the workflow's first lease; False (nothing written) if it has one already."""
        ...

    def update_lease(self, before: Lease, after: Lease) -> bool:
        """Write `after` if the stored lease still equals `before`; whether it did."""
        ...
