"""Peek cost is bounded by the limit, not by how many consumed events a topic holds."""

from __future__ import annotations

import datetime as dt

import pytest

from keep_sdk.conformance.stores._base import StoreTestBase
from keep_sdk.conformance.stores._support import ManualClock
from keep_sdk.model import Event, EventStatus
from keep_sdk.stores import Store, SupportsBulkLoad, SupportsPeekCost

__all__ = ["BacklogTests"]

_WIDE = 500


class BacklogTests(StoreTestBase):
    """A topic with `backlog_size` consumed events peeks as cheaply as a fresh one, and one
    with nothing pending costs next to nothing to peek whatever the limit."""

    def test_peek_cost_does_not_grow_with_consumed_events(
        self, store: Store, clock: ManualClock
    ) -> None:
        if not isinstance(store, SupportsPeekCost) or not isinstance(store, SupportsBulkLoad):
            pytest.skip("the store implements neither peek_cost nor bulk_load_events")
        fresh = self.deploy(store)
        self.publish(store, fresh, *(f"p{i}" for i in range(5)))
        baseline = store.peek_cost(fresh, "in", limit=10)
        wf = self.deploy(store)
        store.bulk_load_events(wf, _events(wf, clock(), self.backlog_size, consumed=True))
        drained = store.peek_cost(wf, "in", limit=_WIDE)
        assert drained <= 2 * baseline + 20, (
            f"peeking {_WIDE} events of a topic whose {self.backlog_size} events are all "
            f"consumed cost {drained}, a fresh topic's 5 pending {baseline}: peek must read "
            "pending events only, however high its limit"
        )
        self.publish(store, wf, *(f"p{i}" for i in range(5)))
        cost = store.peek_cost(wf, "in", limit=10)
        assert [e.message_id for e in store.pending_events(wf, "in", limit=10)] == [
            f"p{i}" for i in range(5)
        ]
        self._peek_cost_measures_the_rows_read(store, clock, baseline)
        assert cost <= 2 * baseline + 20, (
            f"peeking a topic with {self.backlog_size} consumed events cost {cost}, "
            f"a fresh topic {baseline}: peek must read pending events only (an index on them)"
        )

    def test_a_bulk_load_with_an_event_of_another_workflow_loads_nothing(
        self, store: Store, clock: ManualClock
    ) -> None:
        if not isinstance(store, SupportsBulkLoad):
            pytest.skip("the store does not implement bulk_load_events")
        wf, other = self.deploy(store), self.deploy(store)
        mixed = _events(wf, clock(), 3, consumed=False)
        mixed[1] = _events(other, clock(), 2, consumed=False)[1]
        with pytest.raises(ValueError, match=f"event {mixed[1].id!r} of workflow {other!r}"):
            store.bulk_load_events(wf, mixed)
        assert store.pending_events(wf, "in", limit=10) == []
        assert store.pending_events(other, "in", limit=10) == []

    def _peek_cost_measures_the_rows_read(
        self, store: Store, clock: ManualClock, baseline: int
    ) -> None:
        """The bound above proves nothing of a `peek_cost` that does not measure: reading
        `_WIDE` pending events must cost more than reading 5, and a limit of 10 on them less than
        half as much."""
        assert isinstance(store, SupportsPeekCost)
        assert isinstance(store, SupportsBulkLoad)
        wf = self.deploy(store)
        store.bulk_load_events(wf, _events(wf, clock(), _WIDE, consumed=False))
        wide = store.peek_cost(wf, "in", limit=_WIDE)
        narrow = store.peek_cost(wf, "in", limit=10)
        unmeasured = (
            f"peek_cost reported {wide} for a peek that reads {_WIDE} pending events, "
            f"{narrow} for one limited to 10 of them and {baseline} for one that reads 5: "
            "it must count the rows (or index entries, or steps) pending_events examines"
        )
        assert baseline < wide, unmeasured
        assert 2 * narrow < wide, unmeasured


def _events(workflow: str, now: dt.datetime, count: int, *, consumed: bool) -> list[Event]:
    """`count` events of topic ``in``: consumed by an old run, or pending."""
    status = EventStatus.CONSUMED if consumed else EventStatus.PENDING
    return [
        Event(
            id=f"evt_{workflow}_{i}",
            workflow=workflow,
            topic="in",
            message_id=f"{status.value}-{i}",
            title=f"Event {i}",
            status=status,
            reserved_by="run_old" if consumed else None,
            created_at=now,
            updated_at=now,
        )
        for i in range(count)
    ]
