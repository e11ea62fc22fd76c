"""The store suite against the store at ``--keep-store-url`` (what ``keep conformance`` runs).

The URL is opened as every ``keep`` command opens it, through the installed plugins'
``register_stores``, here and in the suite's child processes. The capabilities the
opened store declares (its ``capabilities`` attribute, `StoreCapability`) are the
ones tested; the tests of the others are skipped as not declared.

Tests use fresh workflow names, so an existing database is not wiped, but the
suite does write to it: point it at a scratch database.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from keep_sdk.conformance.pytest_plugin import STORE_URL_OPTION, THOROUGH_OPTION
from keep_sdk.conformance.stores import StoreConformance
from keep_sdk.conformance.stores._base import CAPABILITY_FLAGS
from keep_sdk.conformance.stores._support import ManualClock, open_url
from keep_sdk.stores import Store, StoreCapability, declared_capabilities

__all__ = ["THOROUGH_BACKLOG", "TestStoreAtUrl"]

THOROUGH_BACKLOG = 100_000
"""The bounded-peek backlog under ``--keep-thorough`` (``keep conformance --thorough``)."""

_declared: dict[str, frozenset[StoreCapability]] = {}


def _declared_by(url: str) -> frozenset[StoreCapability]:
    """What the store at `url` declares, read once per URL from a store opened for it."""
    if url not in _declared:
        store = open_url(url)
        try:
            _declared[url] = declared_capabilities(store)
        finally:
            store.close()
    return _declared[url]


class TestStoreAtUrl(StoreConformance):
    """Every store test, against the store the command line names. Its ``supports_*``
    flags are what that store declares."""

    @pytest.fixture(autouse=True)
    def _store_at_url(self, request: pytest.FixtureRequest) -> None:
        url = request.config.getoption(STORE_URL_OPTION)
        if not url:
            pytest.fail("pass --keep-store-url URL (or run `keep conformance --store URL`)")
        self._url = str(url)
        declared = _declared_by(self._url)
        for capability, flag in CAPABILITY_FLAGS.items():
            vars(self)[flag] = capability in declared
        if request.config.getoption(THOROUGH_OPTION):
            vars(self)["backlog_size"] = THOROUGH_BACKLOG

    @pytest.fixture
    def store_url(self) -> str:
        return self._url

    @pytest.fixture
    def store(self, store_url: str, clock: ManualClock) -> Iterator[Store]:
        store = open_url(store_url, clock=clock)
        yield store
        store.close()
