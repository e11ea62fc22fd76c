"""The shipped store suite against the SQL store on SQLite and on a real PostgreSQL."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from keep_sdk.conformance import ManualClock, StoreConformance
from keep_sdk.stores import SqlStore, Store


class TestSqliteStore(StoreConformance):
    supports_processes = True
    supports_reopen = True
    supports_fault_injection = True
    supports_durable = True
    supports_reading_snapshots = True

    @pytest.fixture
    def store_url(self, tmp_path: Path) -> str:
        return f"sqlite:///{tmp_path}/keep.db"

    @pytest.fixture
    def store(self, store_url: str, clock: ManualClock) -> Iterator[SqlStore]:
        store = SqlStore(store_url, clock=clock)
        yield store
        store.close()

    @pytest.mark.slow
    def test_peek_cost_does_not_grow_with_consumed_events(
        self, store: Store, clock: ManualClock
    ) -> None:
        """The suite's test, marked slow: it loads a backlog of `backlog_size` events."""
        super().test_peek_cost_does_not_grow_with_consumed_events(store, clock)


@pytest.mark.postgres
class TestPostgresStore(StoreConformance):
    supports_processes = True
    supports_reopen = True
    supports_fault_injection = True
    supports_durable = True
    supports_reading_snapshots = True

    @pytest.fixture
    def store_url(self, postgres_url: str) -> str:
        return postgres_url

    @pytest.fixture
    def store(self, store_url: str, clock: ManualClock) -> Iterator[SqlStore]:
        store = SqlStore(store_url, clock=clock)
        yield store
        store.close()

    @pytest.mark.slow
    def test_peek_cost_does_not_grow_with_consumed_events(
        self, store: Store, clock: ManualClock
    ) -> None:
        """The suite's test, marked slow: it loads a backlog of `backlog_size` events."""
        super().test_peek_cost_does_not_grow_with_consumed_events(store, clock)

    def test_a_received_notification_wakes_a_store_listening_on_the_inbox(
        self, store: SqlStore, store_url: str, clock: ManualClock
    ) -> None:
        """An idle worker sleeps in `wait_for_inbox` (PostgreSQL ``LISTEN``); a notification
        recorded through another connection ends that sleep, and nothing is left queued."""
        _, invocation = self.started(store)
        listener = SqlStore(store_url, clock=clock)
        try:
            assert listener.wait_for_inbox(0.1) is False
            store.receive_notification(invocation.correlation_key, {"ok": True}, source="test")
            assert listener.wait_for_inbox(20) is True
            assert listener.wait_for_inbox(0.1) is False
        finally:
            listener.close()
