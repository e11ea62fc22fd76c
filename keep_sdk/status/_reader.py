"""The report's queries: a fixed number per report, per workflow and per handler, none of
which reads the rows of history."""

from __future__ import annotations

from collections import Counter

from keep_sdk.model import Event, HandlerKind, LedgerEntry, RunRecord, RunStatus
from keep_sdk.stores import Lease, StatusCounts, Store, SupportsCounts, SupportsPages

__all__ = ["Reader"]

_WAITS = (
    RunStatus.PAUSED_APPROVAL,
    RunStatus.PAUSED_RECONCILIATION,
    RunStatus.PAUSED_WAITING,
    RunStatus.PAUSED_TIMEOUT,
    RunStatus.PAUSED_TRANSIENT,
)
_FAILED = (RunStatus.FAILED_LOGIC, RunStatus.FAILED_INTERNAL)
_INPUT_PAGES = 20
"""How many pages of events, newest first, the report reads to find a workflow's inputs."""


class Reader:
    """Reads, for one workflow or all, what the status report shows; call it inside one
    ``store.reading()`` so it is one snapshot."""

    def __init__(self, store: Store, workflow: str | None) -> None:
        self.store = store
        self.workflow = workflow
        self.leases: dict[str, Lease] = {lease.workflow: lease for lease in store.list_leases()}
        self.handlers = [
            h for h in store.list_handlers(workflow) if workflow is None or h.workflow == workflow
        ]
        self.counts = self._counts()
        waiting = [*store.list_runs(workflow=workflow, status=_WAITS), *self._failures()]
        waiting.sort(key=lambda r: (r.created_at, r.id))
        self._waiting: dict[str, list[RunRecord]] = {}
        for run in waiting:
            self._waiting.setdefault(run.workflow, []).append(run)
        self._entries = self._ledger([r.id for r in waiting])

    def _counts(self) -> StatusCounts:
        if isinstance(self.store, SupportsCounts):
            return self.store.count_by_status(self.workflow)
        names = [self.workflow] if self.workflow else [w.name for w in self.store.list_workflows()]
        events = {n: Counter(e.status.value for e in self.store.list_events(n)) for n in names}
        runs = {n: Counter(r.status.value for r in self.store.list_runs(workflow=n)) for n in names}
        return StatusCounts(
            events={n: dict(c) for n, c in events.items() if c},
            runs={n: dict(c) for n, c in runs.items() if c},
        )

    def _failures(self) -> list[RunRecord]:
        """Failed runs a person must act on: a handler's latest run, failed, not retried
        (an earlier failure was superseded by the later run)."""
        found = []
        for handler in self.handlers:
            latest = self.store.list_runs(
                workflow=handler.workflow, handler=handler.name, newest_first=True, limit=1
            )
            if latest and latest[0].status in _FAILED and not self._retried(latest[0]):
                found.append(latest[0])
        return found

    def _retried(self, run: RunRecord) -> bool:
        return bool(self.store.list_runs(workflow=run.workflow, retry_of=run.id, limit=1))

    def _ledger(self, run_ids: list[str]) -> dict[str, LedgerEntry]:
        if isinstance(self.store, SupportsPages):
            return {e.run_id: e for e in self.store.ledger_for_runs(run_ids)}
        found = (self.store.ledger_entry_for_run(run_id) for run_id in run_ids)
        return {e.run_id: e for e in found if e is not None}

    def waiting(self, workflow: str) -> tuple[list[RunRecord], dict[str, LedgerEntry]]:
        """The workflow's runs that wait, oldest first, and their ledger entries by run."""
        runs = self._waiting.get(workflow, [])
        return runs, {r.id: self._entries[r.id] for r in runs if r.id in self._entries}

    def outputs(self, workflow: str, limit: int) -> list[LedgerEntry]:
        """The newest `limit` ledger entries, oldest first."""
        if isinstance(self.store, SupportsPages):
            return self.store.page_ledger(workflow=workflow, limit=limit)[::-1]
        return self.store.list_ledger(workflow=workflow)[-limit:]

    def inputs(self, workflow: str, limit: int) -> list[Event]:
        """The newest `limit` events that came from outside (not published by one of the
        workflow's consumer runs), oldest first; at most `_INPUT_PAGES` pages are read."""
        store = self.store
        if not isinstance(store, SupportsPages):
            consumer_runs = {
                r.id for r in store.list_runs(workflow=workflow) if r.kind is HandlerKind.CONSUMER
            }
            events = store.list_events(workflow)
            return [e for e in events if e.created_by not in consumer_runs][-limit:]
        size = max(limit, 1) * 2
        found: list[Event] = []
        before: str | None = None
        for _ in range(_INPUT_PAGES):
            page = store.page_events(workflow, before=before, limit=size)
            creators = sorted({e.created_by for e in page if e.created_by is not None})
            consumers = {
                r.id for r in store.runs_by_ids(creators) if r.kind is HandlerKind.CONSUMER
            }
            found += [e for e in page if e.created_by not in consumers]
            if len(found) >= limit or len(page) < size:
                break
            before = page[-1].id
        return found[:limit][::-1]
