"""The shipped store suite against the in-memory reference store."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from keep_sdk.conformance import ManualClock, StoreConformance
from keep_sdk.stores import MemoryStore


class TestMemoryStore(StoreConformance):
    supports_fault_injection = True

    @pytest.fixture
    def store(self, clock: ManualClock) -> Iterator[MemoryStore]:
        store = MemoryStore(clock=clock)
        yield store
        store.close()
