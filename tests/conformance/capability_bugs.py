"""Broken stores, one plausible implementer's mistake each, grouped by capability.

Each class overrides one method of the memory store (or the SQL store, where the
mistake needs a second connection) the way a store author might get it wrong.
`test_capability_bugs.py` shows each bug with direct store calls and checks the
suite catches it.
"""

from __future__ import annotations

import datetime as dt
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from keep_sdk.contract.durable import Invocation, InvocationStatus, Notification
from keep_sdk.errors import ActiveRunExists, NotFound
from keep_sdk.model import Event, EventStatus, LedgerEntry, LedgerStatus, RunRecord, RunStatus
from keep_sdk.stores import (
    ConsumerWake,
    HandlerRecord,
    Lease,
    MemoryStore,
    SqlStore,
    StatusCounts,
    WakeReason,
)

_ROUND_TRIP = 0.1
"""Seconds between a check and the write acting on it (a network round trip)."""


# Pages


class PageSkipsBoundaryRowStore(MemoryStore):
    """Pages after a cursor start one row too late (``<`` taken for ``<=`` on the offset)."""

    def page_events(
        self, workflow: str, *, before: str | None = None, limit: int, **kw: Any
    ) -> list[Event]:
        if before is None:
            return super().page_events(workflow, limit=limit, **kw)
        return super().page_events(workflow, before=before, limit=limit + 1, **kw)[1:]


class PageFiltersAfterLimitStore(MemoryStore):
    """Takes `limit` rows, then filters them: a filtered page comes back short."""

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
        rows = super().page_events(workflow, before=before, limit=limit)
        return [
            e
            for e in rows
            if (topic is None or e.topic == topic)
            and (status is None or e.status is status)
            and (created_by is None or e.created_by == created_by)
        ]


class PageCreatedByIgnoredStore(MemoryStore):
    """Forgets the publishing-run filter of an event page."""

    def page_events(
        self, workflow: str, *, created_by: str | None = None, **kw: Any
    ) -> list[Event]:
        return super().page_events(workflow, **kw)


class RunPagesDropStatusStore(MemoryStore):
    """Filters run pages by workflow or by status, never both (an if/elif)."""

    def page_runs(
        self, *, workflow: str | None = None, status: RunStatus | None = None, **kw: Any
    ) -> list[RunRecord]:
        if workflow is not None:
            return super().page_runs(workflow=workflow, **kw)
        return super().page_runs(status=status, **kw)


class LedgerPagesOfEveryWorkflowStore(MemoryStore):
    """Ledger pages ignore the workflow filter."""

    def page_ledger(
        self, *, workflow: str | None = None, status: LedgerStatus | None = None, **kw: Any
    ) -> list[LedgerEntry]:
        return super().page_ledger(status=status, **kw)


# Counts


class CountsEveryWorkflowStore(MemoryStore):
    """Counting one workflow counts every workflow (the WHERE clause was forgotten)."""

    def count_by_status(self, workflow: str | None = None) -> StatusCounts:
        return super().count_by_status()


class StaleCountCacheStore(MemoryStore):
    """Caches counts and clears the cache on publish only."""

    def __init__(self, **options: Any) -> None:
        super().__init__(**options)
        self.cached: dict[str | None, StatusCounts] = {}

    def publish(self, workflow: str, publication: Any, **kw: Any) -> Any:
        self.cached.clear()
        return super().publish(workflow, publication, **kw)

    def count_by_status(self, workflow: str | None = None) -> StatusCounts:
        if workflow not in self.cached:
            self.cached[workflow] = super().count_by_status(workflow)
        return self.cached[workflow]


class CountsWithoutActiveRunsStore(MemoryStore):
    """Counts runs from the finished runs only (active runs are left out)."""

    def count_by_status(self, workflow: str | None = None) -> StatusCounts:
        counts = super().count_by_status(workflow)
        runs = {
            name: {s: n for s, n in by.items() if s != RunStatus.ACTIVE.value}
            for name, by in counts.runs.items()
        }
        return StatusCounts(events=counts.events, runs={k: v for k, v in runs.items() if v})


class CountsSkippedAsPendingStore(MemoryStore):
    """Counts skipped events as pending (the count predates the skipped status)."""

    def count_by_status(self, workflow: str | None = None) -> StatusCounts:
        counts = super().count_by_status(workflow)
        events: dict[str, dict[str, int]] = {}
        for name, by in counts.events.items():
            merged = dict(by)
            skipped = merged.pop(EventStatus.SKIPPED.value, 0)
            if skipped:
                merged["pending"] = merged.get("pending", 0) + skipped
            events[name] = merged
        return StatusCounts(events=events, runs=counts.runs)


# Claims and timeouts


class ClaimCheckThenActStore(MemoryStore):
    """Checks the claim in one transaction and writes it in another (no compare-and-swap)."""

    def claim_invocation(
        self, invocation_id: str, owner: str, *, until: dt.datetime
    ) -> Invocation | None:
        seen = self.get_invocation(invocation_id)
        now = self.clock()
        live = seen.claim_until is not None and seen.claim_until > now
        if seen.status is not InvocationStatus.ACTIVE or (
            live and seen.claim_owner not in (None, owner)
        ):
            return None
        time.sleep(_ROUND_TRIP)
        with self.transaction() as tx:
            current = tx.invocation(invocation_id)  # type: ignore[attr-defined]
            claimed = current.model_copy(
                update={
                    "claim_owner": owner,
                    "claim_until": until,
                    "claim_version": current.claim_version + 1,
                    "updated_at": now,
                }
            )
            tx.update_invocation(current, claimed)  # type: ignore[attr-defined]
            return claimed  # type: ignore[no-any-return]


class ClaimNeverExpiresStore(MemoryStore):
    """Treats any claim by another owner as live, expired or not."""

    def claim_invocation(
        self, invocation_id: str, owner: str, *, until: dt.datetime
    ) -> Invocation | None:
        current = self.get_invocation(invocation_id)
        if current.claim_owner not in (None, owner):
            return None
        return super().claim_invocation(invocation_id, owner, until=until)


class ClaimedInvocationsNeverExpireStore(MemoryStore):
    """Leaves claimed invocations out of the timeout scan (their poller would handle it)."""

    def expired_invocations(
        self, now: dt.datetime | None = None, limit: int = 100
    ) -> list[Invocation]:
        return [i for i in super().expired_invocations(now, limit) if i.claim_owner is None]


class ClaimBlocksTimeoutStore(MemoryStore):
    """Refuses to time out an invocation while anyone holds a claim, expired or not."""

    def time_out_invocation(self, invocation_id: str) -> Any:
        if self.get_invocation(invocation_id).claim_owner is not None:
            return None
        return super().time_out_invocation(invocation_id)


class DuePollsIgnoreTimeStore(MemoryStore):
    """Hands out every polling invocation, due or not."""

    def due_polls(self, now: dt.datetime | None = None, limit: int = 100) -> list[Invocation]:
        return super().due_polls(dt.datetime.max.replace(tzinfo=dt.UTC), limit)


# reading() snapshots


class AutocommitReadingStore(SqlStore):
    """`reading()` is a no-op: every query autocommits and sees the latest commit."""

    @contextmanager
    def reading(self) -> Iterator[None]:
        yield


class ReadingBypassedByListEventsStore(SqlStore):
    """`list_events` opens a connection of its own, outside the `reading()` snapshot."""

    def list_events(self, workflow: str, **kw: Any) -> list[Event]:
        shared = self._reader.tx if hasattr(self._reader, "tx") else None
        self._reader.tx = None
        try:
            return super().list_events(workflow, **kw)
        finally:
            self._reader.tx = shared


# Planning queries


class PausedProducersDueStore(MemoryStore):
    """Due producers include those of paused workflows."""

    def due_producers(self, now: dt.datetime | None = None) -> list[HandlerRecord]:
        at = now or self.clock()
        current = {w.name: w.version for w in self.list_workflows()}
        due = [
            h
            for h in self.list_handlers()
            if h.kind.value == "producer"
            and current.get(h.workflow) == h.version
            and h.next_run_at is not None
            and h.next_run_at <= at
        ]
        return sorted(due, key=lambda h: (h.next_run_at or at, h.workflow, h.name))


class DueProducersStrictlyBeforeStore(MemoryStore):
    """A producer due exactly now is not due yet (``<`` for ``<=``)."""

    def due_producers(self, now: dt.datetime | None = None) -> list[HandlerRecord]:
        at = now or self.clock()
        return [h for h in super().due_producers(at) if h.next_run_at != at]


class DueProducersCappedStore(MemoryStore):
    """Answers the first ten due producers (a LIMIT copied from the dashboard query)."""

    def due_producers(self, now: dt.datetime | None = None) -> list[HandlerRecord]:
        return super().due_producers(now)[:10]


class DroppedProducersDueStore(MemoryStore):
    """Keeps scheduling a producer the current version no longer declares."""

    def due_producers(self, now: dt.datetime | None = None) -> list[HandlerRecord]:
        at = now or self.clock()
        live = {w.name for w in self.list_workflows() if not w.paused}
        due = [
            h
            for h in self.list_handlers()
            if h.kind.value == "producer"
            and h.workflow in live
            and h.next_run_at is not None
            and h.next_run_at <= at
        ]
        return sorted(due, key=lambda h: (h.next_run_at or at, h.workflow, h.name))


class WakeTimesIgnoredStore(MemoryStore):
    """Wakes consumers for pending events only; a due wakeAt is forgotten."""

    def consumers_to_wake(self, now: dt.datetime | None = None) -> list[ConsumerWake]:
        return [w for w in super().consumers_to_wake(now) if w.reason is WakeReason.PENDING_EVENTS]


# Deploys, runs, events and leases


class DeployIfChangedUnlockedStore(MemoryStore):
    """Compares the source in one transaction and deploys in another."""

    def deploy_if_changed(
        self, name: str, source: str, manifest: Any, *, handlers: Any = ()
    ) -> tuple[int, bool]:
        try:
            current = self.get_workflow_version(name)
        except NotFound:
            current = None
        if current is not None and current.source == source:
            return current.version, False
        time.sleep(_ROUND_TRIP)
        return self.deploy(name, source, manifest, handlers=handlers), True


class PendingNewestFirstStore(MemoryStore):
    """Peeks the newest pending events first (ORDER BY ... DESC)."""

    def pending_events(self, workflow: str, topic: str, *, limit: int) -> list[Event]:
        pending = self.list_events(workflow, topic=topic, status=EventStatus.PENDING)
        return pending[::-1][:limit]


class ActiveRunsWithPausedStore(MemoryStore):
    """Lists paused runs among the active runs (anything not finished)."""

    def active_runs(self) -> list[RunRecord]:
        return [r for r in self.list_runs() if r.status.value.split(":")[0] in ("active", "paused")]


class RenewalNewTokenStore(MemoryStore):
    """The owner renewing its live lease gets a new token (as if it were a takeover)."""

    def acquire_lease(self, workflow: str, owner: str, *, ttl: dt.timedelta) -> Lease | None:
        current = self.get_lease(workflow)
        lease = super().acquire_lease(workflow, owner, ttl=ttl)
        if lease is None or current is None or current.token != lease.token:
            return lease
        with self.transaction() as tx:
            renewed = lease.model_copy(update={"token": lease.token + 1})
            tx.update_lease(lease, renewed)
            return renewed


# Peek cost


class UnmeasuredPeekStore(MemoryStore):
    """Scans every event of the workflow for a peek, and reports the cost of the index
    lookup its author meant to write: one step, whatever was read."""

    def pending_events(self, workflow: str, topic: str, *, limit: int) -> list[Event]:
        found = [
            e for e in self.list_events(workflow, topic=topic) if e.status is EventStatus.PENDING
        ]
        return found[:limit]

    def peek_cost(self, workflow: str, topic: str, *, limit: int) -> int:
        return 1


# Merged checkpoints


class InsertRunUnguardedStore(MemoryStore):
    """Its transactions write a new run without refusing a second active run: `begin_run`
    asks `active_run` first and still refuses, but the merged begin relies on the write."""

    @contextmanager
    def transaction(self, *, write: bool = True) -> Iterator[Any]:
        with super().transaction(write=write) as tx:
            insert_run = tx.insert_run

            def unguarded(run: RunRecord) -> None:
                self._tables.active.pop(run.workflow, None)
                insert_run(run)

            tx.insert_run = unguarded  # type: ignore[method-assign]
            yield tx


class EndingPausedRunBlockedStore(MemoryStore):
    """Refuses any status change of a run while another run of its workflow is active, as
    if ending a paused run competed for the workflow."""

    def set_run_status(self, run_id: str, status: RunStatus, **kw: Any) -> RunRecord:
        run = self.get_run(run_id)
        holder = next((r.id for r in self.active_runs() if r.workflow == run.workflow), None)
        if holder not in (None, run_id):
            raise ActiveRunExists(f"workflow {run.workflow!r} already has an active run ({holder})")
        return super().set_run_status(run_id, status, **kw)


# Durable inbox


class DeliveriesFilteredAfterLimitStore(MemoryStore):
    """Takes the oldest `limit` pending notifications, then keeps those whose run is
    parked: notifications that must wait use up the page, and the inbox stalls."""

    def deliverable_notifications(self, limit: int = 100) -> list[Notification]:
        with self.transaction(write=False) as tx:
            found = []
            for notification in tx.pending_notifications(limit):
                invocation = tx.invocation(notification.invocation_id)
                run = tx.run(invocation.run_id) if invocation else None
                if run is not None and run.status is RunStatus.PAUSED_WAITING:
                    found.append(notification)
            return found
