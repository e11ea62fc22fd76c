"""Counts as properties: after every write, each workflow's counts equal the model's.

For stores implementing `SupportsCounts`. A seeded random sequence of operations
runs through `Scenario`; after each one, `count_by_status` (of every workflow
and of each one) must equal the model at once, holding only that workflow.
"""

from __future__ import annotations

import random
import threading

import pytest

from keep_sdk.conformance.stores._base import StoreTestBase
from keep_sdk.conformance.stores._model import Scenario
from keep_sdk.stores import Publication, Store

__all__ = ["CountPropertyTests"]

_SEEDS = range(2)


class CountPropertyTests(StoreTestBase):
    """`count_by_status` against a model after every write, alone and under threads."""

    @pytest.mark.parametrize("seed", _SEEDS)
    def test_counts_change_at_once_after_every_write_and_stay_per_workflow(
        self, store: Store, seed: int
    ) -> None:
        counter = self.counter(store)
        scenario = Scenario(store, random.Random(seed))
        scenario.deploy(3)
        for step in range(20):
            done = scenario.step()
            every = counter.count_by_status()
            for wf in scenario.workflows:
                events, runs = scenario.event_counts(wf), scenario.run_counts(wf)
                where = f"after step {step} ({done}) with seed {seed}"
                assert every.events.get(wf, {}) == events, f"count_by_status() events {where}"
                assert every.runs.get(wf, {}) == runs, f"count_by_status() runs {where}"
                one = counter.count_by_status(wf)
                assert one.events == ({wf: events} if events else {}), (
                    f"count_by_status({wf!r}) events {where}: {one.events}"
                )
                assert one.runs == ({wf: runs} if runs else {}), (
                    f"count_by_status({wf!r}) runs {where}: {one.runs}"
                )

    def test_counts_are_exact_after_concurrent_writers(self, store: Store) -> None:
        counter = self.counter(store)
        if not self.supports_threads:
            pytest.skip(f"{type(self).__name__} does not declare supports_threads")
        shared, own = self.deploy(store), [self.deploy(store) for _ in range(3)]
        barrier = threading.Barrier(len(own))
        failed: list[BaseException] = []

        def write(index: int) -> None:
            try:
                barrier.wait(30)
                for n in range(8):
                    for wf in (shared, own[index]):
                        mid = f"t{index}-{n}"
                        store.publish(wf, Publication(topic="in", message_id=mid, title=mid))
                    counts = counter.count_by_status(own[index]).events
                    assert counts == {own[index]: {"pending": n + 1}}, counts
            except BaseException as exc:
                failed.append(exc)

        threads = [threading.Thread(target=write, args=(i,)) for i in range(len(own))]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(60)
        assert not failed, f"a writer saw wrong counts: {failed[0]!r}"
        counts = counter.count_by_status()
        assert counts.events.get(shared) == {"pending": 8 * len(own)}
        assert all(counts.events.get(wf) == {"pending": 8} for wf in own)
