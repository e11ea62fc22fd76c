"""The queries, answered from the `Transaction` rows; a backend may override any of them
with a statement of its own (the SQL store does for lists that grow)."""

from __future__ import annotations

import datetime as dt
from collections import Counter
from collections.abc import Callable, Collection, Iterable, Sequence
from typing import TypeVar

from keep_sdk.errors import NotFound
from keep_sdk.model import (
    Event,
    EventStatus,
    HandlerKind,
    LedgerEntry,
    LedgerStatus,
    RunRecord,
    RunStatus,
)
from keep_sdk.stores._commit._core import StoreCore
from keep_sdk.stores._commit.work import (
    require_entry,
    require_event,
    require_handler,
    require_run,
    require_workflow,
)
from keep_sdk.stores._models import (
    AuditEntry,
    ConsumerWake,
    HandlerRecord,
    Lease,
    StatusCounts,
    WakeReason,
    WorkflowRecord,
    WorkflowVersion,
)
from keep_sdk.stores._transaction import Transaction

__all__ = ["Queries", "consumer_wake"]

_Row = TypeVar("_Row")


def _page(
    rows: list[_Row], key: Callable[[_Row], str], before: str | None, limit: int
) -> list[_Row]:
    """Up to `limit` of `rows` (oldest first) that come before the one with id `before`,
    newest first."""
    end = len(rows)
    if before is not None:
        ids = [key(row) for row in rows]
        if before not in ids:
            raise NotFound(f"no row {before!r} to page from; start again from the first page")
        end = ids.index(before)
    return rows[max(0, end - limit) : end][::-1]


def _first(found: Iterable[_Row], limit: int | None) -> list[_Row]:
    rows: list[_Row] = []
    for row in found:
        if limit is not None and len(rows) >= limit:
            break
        rows.append(row)
    return rows


def _statuses(status: RunStatus | Collection[RunStatus]) -> frozenset[RunStatus]:
    return frozenset((status,) if isinstance(status, RunStatus) else status)


class Queries(StoreCore):
    """Every query of the `Store` protocol."""

    def get_workflow(self, name: str) -> WorkflowRecord:
        with self._read() as tx:
            return require_workflow(tx, name)

    def get_workflow_version(self, name: str, version: int | None = None) -> WorkflowVersion:
        with self._read() as tx:
            wanted = require_workflow(tx, name).version if version is None else version
            found = tx.version(name, wanted)
            if found is None:
                raise NotFound(f"workflow {name!r} has no version {wanted}")
            return found

    def list_workflows(self) -> list[WorkflowRecord]:
        with self._read() as tx:
            return sorted(tx.workflows(), key=lambda w: w.name)

    def get_handler(self, workflow: str, handler: str) -> HandlerRecord:
        with self._read() as tx:
            return require_handler(tx, workflow, handler)

    def list_handlers(self, workflow: str | None = None) -> list[HandlerRecord]:
        with self._read() as tx:
            if workflow is not None:
                require_workflow(tx, workflow)
            return sorted(tx.handlers(workflow), key=lambda h: (h.workflow, h.name))

    def get_event(self, event_id: str) -> Event:
        with self._read() as tx:
            return require_event(tx, event_id)

    def pending_events(self, workflow: str, topic: str, *, limit: int) -> list[Event]:
        with self._read() as tx:
            return tx.pending_events(workflow, topic, limit)

    def events_by_ids(self, workflow: str, topic: str, message_ids: Sequence[str]) -> list[Event]:
        wanted = list(dict.fromkeys(message_ids))
        if not wanted:
            return []
        with self._read() as tx:
            found = {e.message_id: e for e in tx.events_by_keys(workflow, topic, wanted)}
        return [found[m] for m in wanted if m in found]

    def list_events(
        self,
        workflow: str,
        *,
        topic: str | None = None,
        status: EventStatus | None = None,
        limit: int | None = None,
    ) -> list[Event]:
        with self._read() as tx:
            return _first(
                (
                    e
                    for e in tx.events(workflow)
                    if (topic is None or e.topic == topic)
                    and (status is None or e.status is status)
                ),
                limit,
            )

    def page_events(
        self,
        workflow: str,
        *,
        topic: str | None = None,
        status: EventStatus | None = None,
        created_by: str | None = None,
        before: str | None = None,
        limit: int,
    ) -> list[Event]:
        with self._read() as tx:
            if before is not None and tx.event(before) is None:
                raise NotFound(f"no event {before!r} to page from; start again from the first page")
            found = [
                e
                for e in tx.events(workflow)
                if (
                    (topic is None or e.topic == topic)
                    and (status is None or e.status is status)
                    and (created_by is None or e.created_by == created_by)
                )
                or e.id == before
            ]
        return _page(found, lambda e: e.id, before, limit)

    def page_runs(
        self,
        *,
        workflow: str | None = None,
        status: RunStatus | None = None,
        before: str | None = None,
        limit: int,
    ) -> list[RunRecord]:
        with self._read() as tx:
            if before is not None and tx.run(before) is None:
                raise NotFound(f"no run {before!r} to page from; start again from the first page")
            found = [
                r
                for r in tx.runs()
                if (
                    (workflow is None or r.workflow == workflow)
                    and (status is None or r.status is status)
                )
                or r.id == before
            ]
        return _page(found, lambda r: r.id, before, limit)

    def page_ledger(
        self,
        *,
        workflow: str | None = None,
        status: LedgerStatus | None = None,
        before: str | None = None,
        limit: int,
    ) -> list[LedgerEntry]:
        with self._read() as tx:
            if before is not None and tx.ledger_entry(before) is None:
                raise NotFound(
                    f"no ledger entry {before!r} to page from; start again from the first page"
                )
            found = [
                e
                for e in tx.ledger_entries()
                if (
                    (workflow is None or e.workflow == workflow)
                    and (status is None or e.status is status)
                )
                or e.id == before
            ]
        return _page(found, lambda e: e.id, before, limit)

    def runs_by_ids(self, run_ids: Sequence[str]) -> list[RunRecord]:
        with self._read() as tx:
            found = (tx.run(run_id) for run_id in dict.fromkeys(run_ids))
            return [run for run in found if run is not None]

    def ledger_for_runs(self, run_ids: Sequence[str]) -> list[LedgerEntry]:
        with self._read() as tx:
            found = (tx.ledger_entry_for_run(run_id) for run_id in dict.fromkeys(run_ids))
            return [entry for entry in found if entry is not None]

    def events_published_by(self, workflow: str, run_ids: Sequence[str]) -> list[Event]:
        wanted = set(run_ids)
        with self._read() as tx:
            return [e for e in tx.events(workflow) if e.created_by in wanted]

    def get_run(self, run_id: str) -> RunRecord:
        with self._read() as tx:
            return require_run(tx, run_id)

    def list_runs(
        self,
        *,
        workflow: str | None = None,
        status: RunStatus | Collection[RunStatus] | None = None,
        limit: int | None = None,
        handler: str | None = None,
        retry_of: str | None = None,
        newest_first: bool = False,
    ) -> list[RunRecord]:
        statuses = None if status is None else _statuses(status)
        with self._read() as tx:
            found = list(tx.runs())
            if newest_first:
                found.reverse()
            return _first(
                (
                    r
                    for r in found
                    if (workflow is None or r.workflow == workflow)
                    and (statuses is None or r.status in statuses)
                    and (handler is None or r.handler == handler)
                    and (retry_of is None or r.retry_of == retry_of)
                ),
                limit,
            )

    def active_runs(self) -> list[RunRecord]:
        return self.list_runs(status=RunStatus.ACTIVE)

    def get_ledger_entry(self, ledger_id: str) -> LedgerEntry:
        with self._read() as tx:
            return require_entry(tx, ledger_id)

    def ledger_entry_for_run(self, run_id: str) -> LedgerEntry | None:
        with self._read() as tx:
            return tx.ledger_entry_for_run(run_id)

    def list_ledger(
        self,
        *,
        workflow: str | None = None,
        status: LedgerStatus | None = None,
        limit: int | None = None,
    ) -> list[LedgerEntry]:
        with self._read() as tx:
            return _first(
                (
                    e
                    for e in tx.ledger_entries()
                    if (workflow is None or e.workflow == workflow)
                    and (status is None or e.status is status)
                ),
                limit,
            )

    def due_reconciliations(self, now: dt.datetime | None = None) -> list[LedgerEntry]:
        at = now or self._now()
        with self._read() as tx:
            due = [
                e
                for e in tx.ledger_entries()
                if e.status is LedgerStatus.NEEDS_RECONCILE
                and (e.next_reconcile_at is None or e.next_reconcile_at <= at)
            ]
        return sorted(due, key=lambda e: e.next_reconcile_at or at)

    def due_producers(self, now: dt.datetime | None = None) -> list[HandlerRecord]:
        at = now or self._now()
        with self._read() as tx:
            due = [
                h
                for h in _current(tx, HandlerKind.PRODUCER)
                if h.next_run_at is not None and h.next_run_at <= at
            ]
        return sorted(due, key=lambda h: (h.next_run_at or at, h.workflow, h.name))

    def consumers_to_wake(self, now: dt.datetime | None = None) -> list[ConsumerWake]:
        at = now or self._now()
        wakes = []
        with self._read() as tx:
            for h in _current(tx, HandlerKind.CONSUMER):
                pending = any(tx.pending_events(h.workflow, t, 1) for t in h.subscribe)
                wake = consumer_wake(h.workflow, h.name, h.wake_at, pending=pending, now=at)
                if wake is not None:
                    wakes.append(wake)
        return wakes

    def audit_log(
        self,
        *,
        workflow: str | None = None,
        after_seq: int = 0,
        limit: int | None = None,
    ) -> list[AuditEntry]:
        with self._read() as tx:
            return _first(
                (
                    a
                    for a in tx.audit_entries(after_seq)
                    if workflow is None or a.workflow == workflow
                ),
                limit,
            )

    def count_by_status(self, workflow: str | None = None) -> StatusCounts:
        with self._read() as tx:
            names = [workflow] if workflow is not None else [w.name for w in tx.workflows()]
            events = {
                name: dict(Counter(e.status.value for e in tx.events(name))) for name in names
            }
            runs = dict(Counter((r.workflow, r.status.value) for r in tx.runs()))
        by_run: dict[str, dict[str, int]] = {}
        for (name, status), count in runs.items():
            if name in names:
                by_run.setdefault(name, {})[status] = count
        return StatusCounts(events={k: v for k, v in events.items() if v}, runs=by_run)

    def get_lease(self, workflow: str) -> Lease | None:
        with self._read() as tx:
            return tx.lease(workflow)

    def list_leases(self) -> list[Lease]:
        with self._read() as tx:
            return list(tx.leases())


def _current(tx: Transaction, kind: HandlerKind) -> list[HandlerRecord]:
    """Handlers of `kind` in the current versions of unpaused workflows, by workflow and name."""
    live = {w.name: w.version for w in tx.workflows() if not w.paused}
    found = [h for h in tx.handlers() if h.kind is kind and live.get(h.workflow) == h.version]
    return sorted(found, key=lambda h: (h.workflow, h.name))


def consumer_wake(
    workflow: str, handler: str, wake_at: dt.datetime | None, *, pending: bool, now: dt.datetime
) -> ConsumerWake | None:
    """Why the consumer should run at `now` (pending events first), or None."""
    if pending:
        reason = WakeReason.PENDING_EVENTS
    elif wake_at is not None and wake_at <= now:
        reason = WakeReason.WAKE_AT
    else:
        return None
    return ConsumerWake(workflow=workflow, handler=handler, reason=reason, wake_at=wake_at)
