"""The store suite against the store at ``--keep-store-url`` (what ``keep conformance`` runs).

Tests use fresh workflow names, so an existing database is not wiped, but the
suite does write to it: point it at a scratch database.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

import pytest

from keep_sdk.conformance.stores import FaultInjector, StoreConformance
from keep_sdk.conformance.stores._support import ManualClock
from keep_sdk.stores import Store, SupportsFaultInjection, open_store, store_scheme

__all__ = ["TestStoreAtUrl"]

_ONE_PROCESS = "memory:// lives in one process: no other process or reopen can reach its data"


class TestStoreAtUrl(StoreConformance):
    """Every store test, against the store the command line names."""

    supports_processes = True
    supports_reopen = True
    supports_fault_injection = True

    @pytest.fixture
    def store_url(self, request: pytest.FixtureRequest) -> str:
        url = request.config.getoption("--keep-store-url")
        if not url:
            pytest.fail("pass --keep-store-url URL (or run `keep conformance --store URL`)")
        return str(url)

    @pytest.fixture
    def store(self, store_url: str, clock: ManualClock) -> Iterator[Store]:
        store = open_store(store_url, clock=clock)
        yield store
        store.close()

    @pytest.fixture
    def reopen(self, store_url: str, clock: ManualClock) -> Iterator[Callable[[], Store]]:
        if store_scheme(store_url) == "memory":
            pytest.skip(_ONE_PROCESS)
        opened: list[Store] = []

        def again() -> Store:
            opened.append(open_store(store_url, clock=clock))
            return opened[-1]

        yield again
        for store in opened:
            store.close()

    @pytest.fixture
    def faults(self, store: Store) -> Iterator[FaultInjector]:
        if not isinstance(store, SupportsFaultInjection):
            pytest.skip("the store has no fault_hook attribute (SupportsFaultInjection)")
        injector = FaultInjector()
        store.fault_hook = injector
        yield injector
        store.fault_hook = None

    def require_processes(self, store_url: str | None) -> str:
        if store_url is None or store_scheme(store_url) == "memory":
            pytest.skip(_ONE_PROCESS)
        return store_url
