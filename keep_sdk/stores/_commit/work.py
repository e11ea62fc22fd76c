"""`Work`: one commit point's view of its transaction.

It reads the clock once, calls the fault hook, turns a missing row into
`NotFound` and a lost conditional update into a `StoreConflict`, and records
every run and ledger change for the listeners.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable

from pydantic import JsonValue

from keep_sdk.errors import MutationConflict, NotFound, StoreConflict
from keep_sdk.model import Event, LedgerEntry, RunRecord
from keep_sdk.stores._changes import LedgerChange, RunChange, StoreChange
from keep_sdk.stores._models import AuditEntry, HandlerRecord, WorkflowRecord
from keep_sdk.stores._transaction import Transaction
from keep_sdk.stores.faults import FaultPoint

__all__ = [
    "Work",
    "in_utc",
    "no_entry",
    "no_handler",
    "no_run",
    "require_entry",
    "require_event",
    "require_handler",
    "require_run",
    "require_workflow",
]

_Row = RunRecord | LedgerEntry


def in_utc(value: dt.datetime | None) -> dt.datetime | None:
    """A caller's time as the same instant in UTC (a time without a zone is taken as UTC)."""
    if value is None:
        return None
    if value.tzinfo is None:
        return value.replace(tzinfo=dt.UTC)
    return value.astimezone(dt.UTC)


def require_workflow(tx: Transaction, name: str, *, lock: bool = False) -> WorkflowRecord:
    """The workflow, or `NotFound`."""
    found = tx.workflow(name, lock=lock)
    if found is None:
        raise NotFound(f"no workflow named {name!r} is deployed")
    return found


def no_handler(workflow: str, handler: str) -> NotFound:
    """The error for a handler the workflow does not have."""
    return NotFound(f"workflow {workflow!r} has no handler {handler!r}")


def require_handler(tx: Transaction, workflow: str, handler: str) -> HandlerRecord:
    """The handler, or `NotFound`."""
    found = tx.handler(workflow, handler)
    if found is None:
        raise no_handler(workflow, handler)
    return found


def require_event(tx: Transaction, event_id: str) -> Event:
    """The event, or `NotFound`."""
    found = tx.event(event_id)
    if found is None:
        raise NotFound(f"no event with id {event_id!r}")
    return found


def no_run(run_id: str) -> NotFound:
    """The error for a run that does not exist."""
    return NotFound(f"no run with id {run_id!r}")


def require_run(tx: Transaction, run_id: str) -> RunRecord:
    """The run, or `NotFound`."""
    found = tx.run(run_id)
    if found is None:
        raise no_run(run_id)
    return found


def no_entry(ledger_id: str) -> NotFound:
    """The error for a ledger entry that does not exist."""
    return NotFound(f"no ledger entry with id {ledger_id!r}")


def require_entry(tx: Transaction, ledger_id: str) -> LedgerEntry:
    """The ledger entry, or `NotFound`."""
    found = tx.ledger_entry(ledger_id)
    if found is None:
        raise no_entry(ledger_id)
    return found


class Work:
    """The transaction `tx` of one commit point at time `now`, recording its changes."""

    def __init__(
        self, tx: Transaction, now: dt.datetime, fault: Callable[[FaultPoint], None]
    ) -> None:
        self.tx = tx
        self.now = now
        self.fault = fault
        self._written: dict[str, tuple[_Row | None, _Row]] = {}

    def changes(self) -> list[StoreChange]:
        """Each run and ledger entry written, once, from its first `before` to its last
        `after`, in the order first written."""
        return [
            RunChange(before=before, after=after)
            if isinstance(after, RunRecord)
            else LedgerChange(before=before, after=after)
            for before, after in self._written.values()
        ]

    def _record(self, key: str, before: _Row | None, after: _Row) -> None:
        first = self._written.get(key)
        self._written[key] = (first[0] if first else before, after)

    def insert_run(self, run: RunRecord) -> RunRecord:
        """Add a new run."""
        self.tx.insert_run(run)
        self._record(f"run:{run.id}", None, run)
        return run

    def update_run(self, before: RunRecord, after: RunRecord) -> RunRecord:
        """Write `after`; `StoreConflict` if the run changed since it was read."""
        if not self.tx.update_run(before, after):
            raise StoreConflict(
                f"run {before.id} changed while this commit point ran; read it again and retry"
            )
        self._record(f"run:{after.id}", before, after)
        return after

    def insert_entry(self, entry: LedgerEntry) -> LedgerEntry:
        """Add a new ledger entry."""
        self.tx.insert_ledger_entry(entry)
        self._record(f"ledger:{entry.id}", None, entry)
        return entry

    def update_entry(self, before: LedgerEntry, after: LedgerEntry) -> LedgerEntry:
        """Write `after`; `MutationConflict` if the entry changed since it was read."""
        if not self.tx.update_ledger_entry(before, after):
            raise MutationConflict(
                f"ledger entry {before.id} changed while this commit point ran; read it again"
            )
        self._record(f"ledger:{after.id}", before, after)
        return after

    def update_event(self, before: Event, after: Event, conflict: StoreConflict) -> Event:
        """Write `after`; raise `conflict` if the event changed since it was read."""
        if not self.tx.update_event(before, after):
            raise conflict
        return after

    def audit(
        self, *, actor: str, action: str, target: str, workflow: str | None, detail: JsonValue
    ) -> AuditEntry:
        """Append an audit entry stamped `now` (the transaction assigns its seq)."""
        return self.tx.append_audit(
            AuditEntry(
                seq=1,
                at=self.now,
                actor=actor,
                action=action,
                workflow=workflow,
                target=target,
                detail=detail,
            )
        )
