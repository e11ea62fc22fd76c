"""The shipped store suite against the in-memory reference store."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from keep_sdk.conformance import ManualClock, StoreConformance
from keep_sdk.stores import MemoryStore, Store


class TestMemoryStore(StoreConformance):
    supports_fault_injection = True
    supports_durable = True

    @pytest.fixture
    def store(self, clock: ManualClock) -> Iterator[MemoryStore]:
        store = MemoryStore(clock=clock)
        yield store
        store.close()

    @pytest.mark.slow
    def test_peek_cost_does_not_grow_with_consumed_events(
        self, store: Store, clock: ManualClock
    ) -> None:
        """The suite's test, marked slow: it loads a backlog of `backlog_size` events."""
        super().test_peek_cost_does_not_grow_with_consumed_events(store, clock)
