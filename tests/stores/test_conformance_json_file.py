"""The shipped store suite against the example store built on the small protocol."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from keep_sdk.conformance import ManualClock, StoreConformance
from tests.stores.json_file_store import JsonFileStore


class TestJsonFileStore(StoreConformance):
    supports_reopen = True
    supports_fault_injection = True

    @pytest.fixture
    def store(self, tmp_path: Path, clock: ManualClock) -> Iterator[JsonFileStore]:
        store = JsonFileStore(tmp_path / "keep.json", clock=clock)
        yield store
        store.close()

    @pytest.fixture
    def reopen(self, tmp_path: Path, clock: ManualClock) -> Callable[[], JsonFileStore]:
        return lambda: JsonFileStore(tmp_path / "keep.json", clock=clock)
