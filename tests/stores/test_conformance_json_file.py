"""The shipped store suite against the example store built on the small protocol."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from keep_sdk.conformance import ManualClock, StoreConformance
from keep_sdk.contract.durable import AttemptKind
from keep_sdk.errors import ConfigurationError
from tests.stores.json_file_store import JsonFileStore


class TestJsonFileStore(StoreConformance):
    supports_reopen = True
    supports_fault_injection = True

    @pytest.fixture
    def store(self, tmp_path: Path, clock: ManualClock) -> Iterator[JsonFileStore]:
        store = JsonFileStore(tmp_path / "keep.json", clock=clock)
        yield store
        store.close()

    def test_durable_operations_are_refused_naming_durable_rows(self, store: JsonFileStore) -> None:
        """A store whose transactions keep no durable rows says what to implement."""
        wf = self.deploy(store)
        run = self.mutating(store, wf)
        with pytest.raises(ConfigurationError) as refused:
            store.record_attempt("inv-1", AttemptKind.CANCEL, "sent")
        assert "_JsonTransaction" in str(refused.value)
        assert str(refused.value).endswith(
            "implement keep_sdk.stores.DurableRows to run durable operations"
        )
        assert store.invocation_for_run(run.id) is None

    @pytest.fixture
    def reopen(self, tmp_path: Path, clock: ManualClock) -> Callable[[], JsonFileStore]:
        return lambda: JsonFileStore(tmp_path / "keep.json", clock=clock)
