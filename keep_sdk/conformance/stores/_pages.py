"""Keyset pages of events, runs and ledger entries: newest first, stable, complete."""

from __future__ import annotations

from typing import Any

import pytest

from keep_sdk.conformance.stores._base import StoreTestBase
from keep_sdk.errors import NotFound
from keep_sdk.model import EventStatus, RunStatus
from keep_sdk.stores import Publication, Store

__all__ = ["CountTests", "PageTests"]


def _pages(fetch: Any, limit: int) -> list[list[str]]:
    """Every page `fetch(before=…, limit=…)` gives, following the cursor to the end."""
    pages: list[list[str]] = []
    before = None
    while True:
        page = [row.id for row in fetch(before=before, limit=limit)]
        assert len(page) <= limit
        if not page:
            return pages
        pages.append(page)
        before = page[-1]


class PageTests(StoreTestBase):
    """`SupportsPages`: following the cursor visits every matching row once, newest first."""

    @pytest.mark.parametrize("limit", [1, 3, 7, 50])
    def test_event_pages_cover_every_event_newest_first(self, store: Store, limit: int) -> None:
        pager = self.pager(store)
        wf = self.deploy(store)
        other = self.deploy(store)
        self.publish(store, other, "elsewhere")
        for i in range(17):
            self.publish(store, wf, f"m{i}", topic="in" if i % 3 else "other")
        every = [e.id for e in store.list_events(wf)][::-1]
        pages = _pages(lambda **kw: pager.page_events(wf, **kw), limit)
        assert [i for page in pages for i in page] == every
        assert all(len(page) == limit for page in pages[:-1])
        in_topic = [e.id for e in store.list_events(wf, topic="other")][::-1]
        pages = _pages(lambda **kw: pager.page_events(wf, topic="other", **kw), limit)
        assert [i for page in pages for i in page] == in_topic

    def test_event_pages_filter_by_status_and_publishing_run(self, store: Store) -> None:
        pager = self.pager(store)
        wf = self.deploy(store)
        self.publish(store, wf, "a", "b", "c")
        run = self.prepared(store, wf, "a")
        store.publish(
            wf, Publication(topic="in", message_id="child", title="child"), created_by=run.id
        )
        skipped = store.events_by_ids(wf, "in", ["b"])[0]
        store.skip_event(skipped.id, actor="tester")
        assert [
            e.message_id for e in pager.page_events(wf, status=EventStatus.SKIPPED, limit=5)
        ] == ["b"]
        assert [e.message_id for e in pager.page_events(wf, created_by=run.id, limit=5)] == [
            "child"
        ]
        assert [
            e.message_id for e in pager.page_events(wf, status=EventStatus.RESERVED, limit=5)
        ] == ["a"]

    def test_a_new_event_does_not_shift_later_pages(self, store: Store) -> None:
        pager = self.pager(store)
        wf = self.deploy(store)
        self.publish(store, wf, *(f"m{i}" for i in range(6)))
        first = pager.page_events(wf, limit=2)
        self.publish(store, wf, "late")
        second = pager.page_events(wf, before=first[-1].id, limit=2)
        assert [e.message_id for e in first + second] == ["m5", "m4", "m3", "m2"]

    def test_an_unknown_cursor_is_not_found(self, store: Store) -> None:
        pager = self.pager(store)
        wf = self.deploy(store)
        self.publish(store, wf, "a")
        with pytest.raises(NotFound):
            pager.page_events(wf, before="evt_missing", limit=5)
        with pytest.raises(NotFound):
            pager.page_runs(before="run_missing", limit=5)
        with pytest.raises(NotFound):
            pager.page_ledger(before="led_missing", limit=5)

    @pytest.mark.parametrize("limit", [1, 2, 5])
    def test_run_and_ledger_pages_cover_every_row(self, store: Store, limit: int) -> None:
        pager = self.pager(store)
        wf = self.deploy(store)
        for i in range(5):
            run = self.mutating(store, wf, f"m{i}")
            self.intent(store, run)
            store.set_run_status(run.id, RunStatus.FAILED_LOGIC, error=f"boom {i}")
        runs = [r.id for r in store.list_runs(workflow=wf)][::-1]
        assert [
            i for p in _pages(lambda **kw: pager.page_runs(workflow=wf, **kw), limit) for i in p
        ] == runs
        failed = _pages(
            lambda **kw: pager.page_runs(workflow=wf, status=RunStatus.FAILED_LOGIC, **kw), limit
        )
        assert [i for p in failed for i in p] == runs
        ledger = [e.id for e in store.list_ledger(workflow=wf)][::-1]
        assert len(ledger) == 5
        pages = _pages(lambda **kw: pager.page_ledger(workflow=wf, **kw), limit)
        assert [i for p in pages for i in p] == ledger

    def test_batch_lookups_answer_for_known_ids_only(self, store: Store) -> None:
        pager = self.pager(store)
        wf = self.deploy(store)
        first = self.mutating(store, wf, "a")
        self.intent(store, first)
        store.set_run_status(first.id, RunStatus.FAILED_LOGIC, error="boom")
        second = self.prepared(store, wf, "b")
        store.publish(
            wf, Publication(topic="in", message_id="c1", title="c1"), created_by=second.id
        )
        store.publish(wf, Publication(topic="in", message_id="c2", title="c2"), created_by=first.id)
        asked = [second.id, "run_missing", first.id, second.id]
        assert [r.id for r in pager.runs_by_ids(asked)] == [second.id, first.id]
        assert [e.run_id for e in pager.ledger_for_runs(asked)] == [first.id]
        published = pager.events_published_by(wf, [first.id, second.id, "run_missing"])
        assert [e.message_id for e in published] == ["c1", "c2"]
        assert pager.events_published_by(wf, []) == []
        assert pager.runs_by_ids([]) == []


class CountTests(StoreTestBase):
    """`SupportsCounts`: the counts by status equal the rows listed."""

    def test_counts_by_status_equal_the_listed_rows(self, store: Store) -> None:
        counter = self.counter(store)
        wf, other, empty = self.deploy(store), self.deploy(store), self.deploy(store)
        self.publish(store, wf, "a", "b", "c")
        self.publish(store, other, "x")
        self.prepared(store, wf, "a")
        store.skip_event(store.events_by_ids(wf, "in", ["b"])[0].id, actor="tester")
        counts = counter.count_by_status()
        for name in (wf, other):
            listed_events: dict[str, int] = {}
            for event in store.list_events(name):
                listed_events[event.status.value] = listed_events.get(event.status.value, 0) + 1
            listed_runs: dict[str, int] = {}
            for run in store.list_runs(workflow=name):
                listed_runs[run.status.value] = listed_runs.get(run.status.value, 0) + 1
            assert counts.events.get(name, {}) == listed_events
            assert counts.runs.get(name, {}) == listed_runs
        assert counts.events[wf] == {"pending": 1, "reserved": 1, "skipped": 1}
        assert counts.runs[wf] == {RunStatus.ACTIVE.value: 1}
        assert empty not in counts.events
        assert counter.count_by_status(other).events == {other: {"pending": 1}}
