"""Change listeners: every committed run and ledger change, after the commit, in order."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from keep_sdk.conformance.stores._base import StoreTestBase
from keep_sdk.conformance.stores._support import CONSUMER, FaultInjector, InjectedFault
from keep_sdk.errors import ActiveRunExists, PhaseConflict
from keep_sdk.model import HandlerKind, PrepareResult, Reservation, RunPhase, RunStatus
from keep_sdk.stores import (
    LedgerChange,
    Publication,
    RunChange,
    Store,
    StoreChange,
    SupportsChangeListeners,
)

__all__ = ["ChangeTests"]


def _listening(store: Store) -> SupportsChangeListeners:
    """`store` as a store with listeners; skips the test for a store without them."""
    if not isinstance(store, SupportsChangeListeners):
        pytest.skip(
            f"{type(store).__name__} does not implement add_listener: change listeners are an "
            "optional protocol (SupportsChangeListeners), and a Store without them is valid"
        )
    return store


class ChangeTests(StoreTestBase):
    """add_listener / remove_listener (`SupportsChangeListeners`); skipped without them."""

    @pytest.fixture
    def heard(self, store: Store) -> Iterator[list[StoreChange]]:
        """The changes a listener added to `store` hears, in order."""
        listening = _listening(store)
        found: list[StoreChange] = []
        listening.add_listener(found.append)
        yield found
        listening.remove_listener(found.append)

    def test_a_listener_hears_each_commit_in_order(
        self, store: Store, heard: list[StoreChange]
    ) -> None:
        wf = self.deploy(store)
        self.publish(store, wf, "a")
        assert heard == []
        begun = self.begin_consumer(store, wf)
        prepared = store.save_prepare_result(
            begun.id, PrepareResult(reservations=[Reservation(topic="in", ids=["a"])])
        )
        mutating = store.advance_phase(begun.id, RunPhase.MUTATING)
        entry = self.intent(store, mutating)
        applied = store.record_mutation_applied(entry.id, {"row": 1})
        mutated = store.get_run(begun.id)
        committed = store.commit_consumer_run(
            begun.id, publishes=[Publication(topic="out", message_id="o", title="Out")]
        ).run
        assert heard == [
            RunChange(before=None, after=begun),
            RunChange(before=begun, after=prepared),
            RunChange(before=prepared, after=mutating),
            LedgerChange(before=None, after=entry),
            LedgerChange(before=entry, after=applied),
            RunChange(before=mutating, after=mutated),
            RunChange(before=mutated, after=committed),
        ]

    def test_nothing_is_heard_of_a_refused_commit(
        self, store: Store, heard: list[StoreChange]
    ) -> None:
        wf = self.deploy(store)
        run = self.begin_consumer(store, wf)
        heard.clear()
        with pytest.raises(ActiveRunExists):
            self.begin_producer(store, wf)
        with pytest.raises(PhaseConflict):
            store.advance_phase(run.id, RunPhase.MUTATED)
        assert heard == []

    def test_nothing_is_heard_of_a_commit_that_failed(
        self, store: Store, heard: list[StoreChange], faults: FaultInjector
    ) -> None:
        wf = self.deploy(store)
        run = self.prepared(store, wf, "a")
        heard.clear()
        faults.arm(1)
        with pytest.raises(InjectedFault):
            store.set_run_status(run.id, RunStatus.CRASHED, release_reservations=True)
        faults.disarm()
        assert heard == []
        crashed = store.set_run_status(run.id, RunStatus.CRASHED, release_reservations=True)
        assert heard == [RunChange(before=run, after=crashed)]

    def test_a_listener_that_raises_does_not_undo_the_commit(
        self, store: Store, heard: list[StoreChange]
    ) -> None:
        listening = _listening(store)

        def broken(change: StoreChange) -> None:
            raise RuntimeError("listener bug")

        listening.add_listener(broken)
        try:
            wf = self.deploy(store)
            run = store.begin_run(wf, CONSUMER, HandlerKind.CONSUMER)
        finally:
            listening.remove_listener(broken)
        assert store.get_run(run.id) == run
        assert heard == [RunChange(before=None, after=run)]
        store.set_run_status(run.id, RunStatus.CRASHED)
        assert len(heard) == 2

    def test_a_removed_listener_hears_nothing_more(self, store: Store) -> None:
        listening = _listening(store)
        found: list[StoreChange] = []
        listening.add_listener(found.append)
        wf = self.deploy(store)
        self.begin_consumer(store, wf)
        listening.remove_listener(found.append)
        self.begin_consumer(store, self.deploy(store))
        assert len(found) == 1
