"""Planning queries as properties over many workflows: due producers and wake times.

Many workflows get random next-run and wake times (stray ones on the handler of the other
kind too, which neither query may act on), pending events, pauses and versions that drop
their producer, the first three one of each case for certain; `due_producers` and
`consumers_to_wake` at several instants (boundaries included) must equal what the model
derives.
"""

from __future__ import annotations

import datetime as dt
import random
import uuid
from dataclasses import dataclass

import pytest

from keep_sdk.conformance.stores._base import StoreTestBase
from keep_sdk.conformance.stores._support import (
    CONSUMER,
    PRODUCER,
    STANDARD_HANDLERS,
    ManualClock,
)
from keep_sdk.stores import Publication, Store, WakeReason

__all__ = ["PlanningTests"]

_SEEDS = range(1)
_WORKFLOWS = 30


@dataclass(frozen=True)
class _Case:
    """A workflow the random ones cannot leave out: `choice` below 0.15 pauses it, below
    0.3 redeploys it without its producer; `early` makes its producer and consumer due from
    the first instant checked."""

    choice: float
    early: bool
    stray: bool
    pending: bool

    def due(self, times: list[dt.datetime]) -> dt.datetime | None:
        return times[0] if self.early else None


_FIXED = (
    _Case(choice=0.0, early=True, stray=False, pending=True),
    _Case(choice=0.2, early=True, stray=False, pending=False),
    _Case(choice=0.5, early=False, stray=True, pending=False),
)
"""A paused workflow with everything due, a redeployed one whose dropped producer was due,
and one whose only times are stray ones on the other handler kind."""


class PlanningTests(StoreTestBase):
    """due_producers and consumers_to_wake against a model, over many workflows."""

    @pytest.mark.parametrize("seed", _SEEDS)
    def test_planning_queries_over_many_workflows_match_the_model(
        self, store: Store, clock: ManualClock, seed: int
    ) -> None:
        rng = random.Random(seed)
        now = clock()
        consumers = [h for h in STANDARD_HANDLERS if h.name != PRODUCER]
        producer_due: dict[str, dt.datetime | None] = {}
        wake_at: dict[str, dt.datetime | None] = {}
        pending: dict[str, bool] = {}
        mine: set[str] = set()
        times = [now + dt.timedelta(minutes=m) for m in range(-30, 31, 5)]
        for index in range(_WORKFLOWS):
            name = f"wf-{uuid.uuid4().hex[:12]}"
            mine.add(name)
            store.deploy(name, "v1", {}, handlers=STANDARD_HANDLERS)
            fixed = _FIXED[index] if index < len(_FIXED) else None
            due = rng.choice([None, *times]) if fixed is None else fixed.due(times)
            store.set_next_run_at(name, PRODUCER, due)
            wake = rng.choice([None, None, *times]) if fixed is None else fixed.due(times)
            store.set_wake_at(name, CONSUMER, wake)
            if rng.random() < 0.5 if fixed is None else fixed.stray:
                store.set_next_run_at(name, CONSUMER, rng.choice(times))
                store.set_wake_at(name, PRODUCER, rng.choice(times))
            pending[name] = rng.random() < 0.25 if fixed is None else fixed.pending
            if pending[name]:
                store.publish(name, Publication(topic="in", message_id="p", title="p"))
            choice = rng.random() if fixed is None else fixed.choice
            if choice < 0.15:
                store.pause_workflow(name, actor="ops")
                continue
            if choice < 0.3:
                store.deploy(name, "v2", {}, handlers=consumers)
                producer_due[name] = None
            else:
                producer_due[name] = due
            wake_at[name] = wake
        for at in (times[0] - dt.timedelta(seconds=1), *rng.sample(times, 4), times[-1]):
            found = [h for h in store.due_producers(at) if h.workflow in mine]
            expected = {w for w, due in producer_due.items() if due is not None and due <= at}
            assert {h.workflow for h in found} == expected, f"due_producers({at}) seed {seed}"
            assert all(h.name == PRODUCER for h in found)
            order = [h.next_run_at for h in found]
            assert order == sorted(order), f"due_producers({at}) is not earliest first"  # type: ignore[type-var]
            wakes = [w for w in store.consumers_to_wake(at) if w.workflow in mine]
            expected_wakes = sorted(
                (w, CONSUMER, WakeReason.PENDING_EVENTS if pending[w] else WakeReason.WAKE_AT)
                for w, wake in wake_at.items()
                if pending[w] or (wake is not None and wake <= at)
            )
            assert [(w.workflow, w.handler, w.reason) for w in wakes] == expected_wakes, (
                f"consumers_to_wake({at}) seed {seed}"
            )
