"""The shipped store suite against the SQL store on SQLite and on a real PostgreSQL.

The store builds the models of the rows it reads back without validating them again
(`trusted`); throughout the suite each such model is checked against its validated copy.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from keep_sdk.conformance import ManualClock, StoreConformance
from keep_sdk.errors import StoreUnavailable
from keep_sdk.stores import SqlStore, Store
from keep_sdk.stores.sql import _rows, _transaction
from tests.trusted_models import checked_trusted


@pytest.fixture(autouse=True)
def _rows_are_built_as_validation_would(monkeypatch: pytest.MonkeyPatch) -> None:
    for module in (_rows, _transaction):
        monkeypatch.setattr(module, "trusted", checked_trusted)


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

    def test_a_lost_listen_connection_is_unavailable_and_the_next_wait_listens_again(
        self, store_url: str, clock: ManualClock
    ) -> None:
        """The server ends the listening backend (a restart, an administrator): the wait
        says so with the driver's reason and what to check, and the next one listens anew."""
        listener = SqlStore(store_url, clock=clock)
        try:
            assert listener.wait_for_inbox(0.01) is False
            with listener.engine.connect() as conn:
                ended = (
                    conn.exec_driver_sql(
                        "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                        "WHERE datname = current_database() AND query = 'LISTEN keep_inbox'"
                    )
                    .scalars()
                    .all()
                )
            assert ended == [True]
            with pytest.raises(StoreUnavailable) as lost:
                listener.wait_for_inbox(5)
            reason = lost.value.reason
            assert reason is not None
            assert "server closed the connection" in reason or "terminating connection" in reason
            assert str(lost.value) == (
                f"{listener!r} lost its LISTEN connection: {reason}; "
                "check that the database server is running and reachable"
            )
            assert lost.value.__cause__ is not None
            assert listener.wait_for_inbox(0.01) is False
        finally:
            listener.close()

    def test_a_refused_listen_connection_says_what_the_server_said(
        self, store_url: str, clock: ManualClock
    ) -> None:
        """Opening the listening connection fails: the reason is the server's own words, not
        SQLAlchemy's wrapping of them; the next wait, once the server accepts, listens."""
        listener = SqlStore(store_url, clock=clock)
        database = store_url.rpartition("/")[2]
        try:
            _allow_connections(store_url, allowed=False)
            listener.engine.dispose()
            try:
                with pytest.raises(StoreUnavailable) as refused:
                    listener.wait_for_inbox(0.01)
            finally:
                _allow_connections(store_url, allowed=True)
            reason = str(refused.value.reason)
            assert f'database "{database}" is not currently accepting connections' in reason
            assert "sqlalche.me" not in str(refused.value)
            assert listener.wait_for_inbox(0.01) is False
        finally:
            listener.close()


def _allow_connections(store_url: str, *, allowed: bool) -> None:
    """``ALTER DATABASE … ALLOW_CONNECTIONS``, from the server's ``postgres`` database."""
    import psycopg

    base, _, database = store_url.rpartition("/")
    with psycopg.connect(f"{base}/postgres", autocommit=True) as admin:
        admin.execute(f'ALTER DATABASE "{database}" ALLOW_CONNECTIONS {str(allowed).lower()}')
