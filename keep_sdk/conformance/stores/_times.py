"""Times are instants in UTC, whatever the process's ``TZ`` says or the zone a caller used."""

from __future__ import annotations

import datetime as dt
import time
from collections.abc import Callable, Iterator
from zoneinfo import ZoneInfo

import pytest

from keep_sdk.conformance.stores._base import StoreTestBase
from keep_sdk.conformance.stores._support import PRODUCER, ManualClock
from keep_sdk.stores import Store

__all__ = ["TimeTests"]

_ZONES = ("Pacific/Chatham", "America/St_Johns")
"""UTC+12:45/+13:45 and UTC-3:30/-2:30: offsets no whole-hour slip can hide."""


class TimeTests(StoreTestBase):
    """Stored times (event, run, schedule and reconcile times) under a non-UTC ``TZ``."""

    @pytest.fixture(params=_ZONES)
    def local_zone(self, request: pytest.FixtureRequest) -> Iterator[ZoneInfo]:
        """The process runs with ``TZ`` set to a zone far from UTC for the test."""
        name = str(request.param)
        with pytest.MonkeyPatch.context() as patch:
            patch.setenv("TZ", name)
            time.tzset()
            try:
                yield ZoneInfo(name)
            finally:
                patch.undo()
                time.tzset()

    def test_times_are_kept_as_utc_instants_whatever_tz_says(
        self, store: Store, clock: ManualClock, local_zone: ZoneInfo
    ) -> None:
        wf = self.deploy(store)
        self.publish(store, wf, "a")
        [event] = store.list_events(wf)
        assert event.created_at == clock()
        assert event.created_at.utcoffset() == dt.timedelta(0)
        run = self.begin_producer(store, wf)
        assert run.created_at == clock()
        assert run.created_at.utcoffset() == dt.timedelta(0)
        due = clock() + dt.timedelta(minutes=5)
        store.commit_producer_run(
            run.id, state=None, publishes=[], next_run_at=due.astimezone(local_zone)
        )
        handler = store.get_handler(wf, PRODUCER)
        assert handler.next_run_at == due
        assert handler.next_run_at is not None
        assert handler.next_run_at.utcoffset() == dt.timedelta(0)

        def due_names(at: dt.datetime) -> list[str]:
            return [h.name for h in store.due_producers(at) if h.workflow == wf]

        assert due_names((due - dt.timedelta(seconds=1)).astimezone(local_zone)) == []
        assert due_names(due.astimezone(local_zone)) == [PRODUCER]
        clock.set(due - dt.timedelta(seconds=1))
        assert due_names_default(store, wf) == []
        clock.set(due)
        assert due_names_default(store, wf) == [PRODUCER]

    def test_reconcile_times_compare_as_instants_whatever_tz_says(
        self, store: Store, clock: ManualClock, local_zone: ZoneInfo
    ) -> None:
        wf = self.deploy(store)
        run = self.mutating(store, wf, "a")
        entry = self.intent(store, run)
        due = clock() + dt.timedelta(hours=3)
        entry = store.record_needs_reconcile(
            entry.id, next_reconcile_at=due.astimezone(local_zone), error="timeout"
        )
        assert entry.next_reconcile_at == due
        assert entry.next_reconcile_at is not None
        assert entry.next_reconcile_at.utcoffset() == dt.timedelta(0)

        def due_ids(at: dt.datetime) -> list[str]:
            return [e.id for e in store.due_reconciliations(at) if e.workflow == wf]

        assert due_ids((due - dt.timedelta(minutes=1)).astimezone(local_zone)) == []
        assert due_ids(due.astimezone(local_zone)) == [entry.id]

    def test_schedule_times_survive_reopen_as_the_same_instants(
        self,
        store: Store,
        clock: ManualClock,
        reopen: Callable[[], Store],
        local_zone: ZoneInfo,
    ) -> None:
        wf = self.deploy(store)
        run = self.begin_producer(store, wf)
        due = clock() + dt.timedelta(minutes=7)
        store.commit_producer_run(
            run.id, state=None, publishes=[], next_run_at=due.astimezone(local_zone)
        )
        again = reopen()
        handler = again.get_handler(wf, PRODUCER)
        assert handler.next_run_at == due
        assert handler.next_run_at is not None
        assert handler.next_run_at.utcoffset() == dt.timedelta(0)
        assert [h.name for h in again.due_producers(due) if h.workflow == wf] == [PRODUCER]


def due_names_default(store: Store, workflow: str) -> list[str]:
    """Producers due at the store's own clock."""
    return [h.name for h in store.due_producers() if h.workflow == workflow]
