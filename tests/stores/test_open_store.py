"""open_store: built-in schemes, the default location, plugin schemes, bad URLs."""

from __future__ import annotations

import sqlite3
import time
import urllib.parse
from collections.abc import Callable, Mapping
from contextlib import suppress
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa
from hypothesis import given
from hypothesis import strategies as st

from keep_sdk.errors import ConfigurationError, StoreUnavailable
from keep_sdk.plugins import KeepPlugins, default_plugins, hookimpl
from keep_sdk.stores import (
    DEFAULT_STORE_URL,
    MemoryStore,
    SqlStore,
    open_store,
    redacted_url,
    store_scheme,
)
from keep_sdk.stores.sql import sqlalchemy_url


def test_memory_url_opens_a_fresh_memory_store() -> None:
    assert isinstance(open_store("memory://"), MemoryStore)


def test_without_a_url_the_store_is_keep_db_in_the_working_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    store = open_store()
    try:
        assert isinstance(store, SqlStore)
        assert DEFAULT_STORE_URL == "sqlite:///.keep/keep.db"
        assert (tmp_path / ".keep" / "keep.db").exists()
    finally:
        store.close()


def test_sqlite_runs_in_wal_mode_with_foreign_keys(tmp_path: Path) -> None:
    store = SqlStore(f"sqlite:///{tmp_path}/deep/dir/keep.db?busy_timeout=1234")
    try:
        with store.engine.connect() as conn:
            pragmas = {
                name: conn.exec_driver_sql(f"PRAGMA {name}").scalar()
                for name in (
                    "journal_mode",
                    "foreign_keys",
                    "busy_timeout",
                    "synchronous",
                    "journal_size_limit",
                )
            }
        assert pragmas == {
            "journal_mode": "wal",
            "foreign_keys": 1,
            "busy_timeout": 1234,
            "synchronous": 2,
            "journal_size_limit": 64 * 1024 * 1024,
        }
    finally:
        store.close()


@pytest.mark.parametrize(("given", "level"), [("off", 0), ("Normal", 1), ("FULL", 2), ("extra", 3)])
def test_every_sqlite_synchronous_mode_is_taken_in_any_case(
    tmp_path: Path, given: str, level: int
) -> None:
    assert _pragma(f"sqlite:///{tmp_path}/keep.db?synchronous={given}", "synchronous") == level


def test_postgresql_urls_use_psycopg_3() -> None:
    for url in ("postgresql://u@h/db", "postgres://u@h/db", "postgresql+psycopg://u@h/db"):
        assert sqlalchemy_url(url).drivername == "postgresql+psycopg"


@pytest.mark.parametrize(
    ("url", "message"),
    [
        ("sqlite://", "names no file"),
        ("sqlite:///:memory:", r"names no file; use sqlite:///path/to/keep.db \(or memory://"),
        (
            "postgresql://keep:s3cret@db:port/keep",
            r"'postgresql://keep:\*\*\*@db:port/keep' is not a",
        ),
        ("::nope::", "store URL '::nope::' is not a database URL: Could not parse"),
        ("mysql://u@h/db", "supports sqlite:// and postgresql://"),
        ("sqlite:///x.db?synchronous=sometimes", "not a SQLite mode"),
        ("sqlite:///x.db?journal_size_limit=-5", "not a number of bytes"),
        ("sqlite:///x.db?journal_size_limit=lots", "not a number of bytes"),
    ],
)
def test_bad_sql_urls_are_configuration_errors(url: str, message: str) -> None:
    with pytest.raises(ConfigurationError, match=message):
        SqlStore(url)


def test_unknown_schemes_and_urls_without_scheme_are_refused() -> None:
    with pytest.raises(ConfigurationError, match="no store is registered"):
        open_store("redis://localhost")
    with pytest.raises(ConfigurationError, match="has no scheme"):
        open_store("keep.db")
    assert store_scheme("postgresql+psycopg://x") == "postgresql"


class _CustomStores:
    def __init__(self) -> None:
        self.opened: list[tuple[str, dict[str, Any]]] = []

    @hookimpl
    def register_stores(self) -> Mapping[str, Callable[..., Any]]:
        def opener(url: str, **options: Any) -> MemoryStore:
            self.opened.append((url, options))
            return MemoryStore(**options)

        return {"custom": opener}


def test_plugins_add_schemes() -> None:
    import keep_sdk

    plugin = _CustomStores()
    plugins = KeepPlugins(load_entry_points=False)
    plugins.register(plugin, name="custom-stores")
    store = keep_sdk.open_store("custom://anything", plugins=plugins, clock=lambda: None)
    assert isinstance(store, MemoryStore)
    assert plugin.opened[0][0] == "custom://anything"
    assert set(plugin.opened[0][1]) == {"clock"}
    assert isinstance(keep_sdk.open_store("memory://", plugins=plugins), MemoryStore)
    with pytest.raises(ConfigurationError):
        keep_sdk.open_store("custom://anything")
    with pytest.raises(ConfigurationError):
        open_store("custom://anything")


def test_the_facade_knows_the_installed_plugins_schemes() -> None:
    import keep_sdk

    plugin = _CustomStores()
    plugins = default_plugins()
    plugins.register(plugin, name="custom-stores")
    try:
        assert isinstance(keep_sdk.open_store("custom://x"), MemoryStore)
    finally:
        plugins.pm.unregister(plugin)


def test_sqlalchemy_is_configured_for_immediate_write_transactions(tmp_path: Path) -> None:
    store = SqlStore(f"sqlite:///{tmp_path}/k.db")
    try:
        statements: list[str] = []
        sa.event.listen(
            store.engine, "before_cursor_execute", lambda *args: statements.append(args[2])
        )
        store.list_workflows()
        store.deploy("w", "s", {})
        assert "BEGIN" in statements
        assert "BEGIN IMMEDIATE" in statements
    finally:
        store.close()


def test_an_unreachable_database_is_a_store_error() -> None:
    with pytest.raises(StoreUnavailable, match="could not complete the operation") as caught:
        SqlStore("postgresql://nobody:s3cret-word@127.0.0.1:1/none?connect_timeout=2")
    assert str(caught.value).endswith("; check that the database server is running and reachable")
    assert "nobody:***@127.0.0.1" in str(caught.value)
    assert "s3cret-word" not in str(caught.value)


def test_the_busy_timeout_bounds_the_wait_to_open_a_database_another_program_locked(
    tmp_path: Path,
) -> None:
    """Two workers first opening one new file: the second waits `busy_timeout`, not
    sqlite3's own five seconds, before saying another program holds the lock."""
    path = tmp_path / "keep.db"
    holder = sqlite3.connect(path, isolation_level=None)
    holder.execute("BEGIN EXCLUSIVE")
    holder.execute("CREATE TABLE elsewhere (a)")
    started = time.monotonic()
    try:
        with pytest.raises(StoreUnavailable, match="another program holds the database lock"):
            SqlStore(f"sqlite:///{path}?busy_timeout=300")
    finally:
        holder.close()
    assert 0.3 <= time.monotonic() - started < 4.5


@pytest.mark.parametrize("limit", [0, 1, 4096])
def test_any_journal_size_limit_of_zero_bytes_or_more_is_taken(tmp_path: Path, limit: int) -> None:
    """0 truncates the WAL to nothing after each checkpoint (SQLite's own meaning)."""
    url = f"sqlite:///{tmp_path}/keep.db?journal_size_limit={limit}"
    assert _pragma(url, "journal_size_limit") == limit


def _pragma(url: str, name: str) -> object:
    """The value of SQLite pragma `name` on a connection of the store opened at `url`."""
    store = SqlStore(url)
    try:
        with store.engine.connect() as conn:
            return conn.exec_driver_sql(f"PRAGMA {name}").scalar()
    finally:
        store.close()


def test_the_wal_shrinks_back_to_its_limit_after_a_checkpoint(tmp_path: Path) -> None:
    import datetime as dt

    from keep_sdk.model import Event

    limit = 200_000
    store = SqlStore(f"sqlite:///{tmp_path}/keep.db?journal_size_limit={limit}")
    wal = tmp_path / "keep.db-wal"
    try:
        store.deploy("w", "s", {})
        big = [
            Event(
                id=f"e{i}",
                workflow="w",
                topic="t",
                message_id=f"m{i}",
                title="x",
                payload={"blob": "x" * 4000},
                created_at=dt.datetime(2026, 1, 1, tzinfo=dt.UTC),
                updated_at=dt.datetime(2026, 1, 1, tzinfo=dt.UTC),
            )
            for i in range(1000)
        ]
        store.bulk_load_events("w", big)
        grown = wal.stat().st_size
        assert grown > 10 * limit
        raw = store.engine.raw_connection()
        try:
            raw.cursor().execute("PRAGMA wal_checkpoint(PASSIVE)")
        finally:
            raw.close()
        store.deploy("w2", "s", {})
        assert wal.stat().st_size <= limit
    finally:
        store.close()


_URL_TEXT = st.text(
    alphabet=st.characters(codec="ascii", exclude_characters="/?#@:%"), min_size=1, max_size=12
)


@given(
    scheme=st.sampled_from(["postgresql", "postgresql+psycopg", "myplugin"]),
    user=_URL_TEXT,
    password=st.text(min_size=1, max_size=12),
    host=_URL_TEXT,
    tail=st.sampled_from(["", "/keep", "/keep?sslmode=require", ":5432/db#x", "?a=b@c"]),
)
def test_a_shown_url_keeps_everything_but_the_password(
    scheme: str, user: str, password: str, host: str, tail: str
) -> None:
    encoded = urllib.parse.quote(password, safe="")
    url = f"{scheme}://{user}:{encoded}@{host}{tail}"
    assert redacted_url(url) == f"{scheme}://{user}:***@{host}{tail}"
    assert redacted_url(f"{scheme}://{user}@{host}{tail}") == f"{scheme}://{user}@{host}{tail}"
    assert redacted_url(f"{scheme}://{host}{tail}") == f"{scheme}://{host}{tail}"


@pytest.mark.parametrize(
    "url", ["sqlite:///.keep/keep.db", "sqlite:////tmp/a:b@c/keep.db", "memory://", "no scheme"]
)
def test_urls_without_a_password_are_shown_as_written(url: str) -> None:
    assert redacted_url(url) == url


@given(
    url=st.one_of(
        st.text(max_size=40),
        st.builds(
            lambda scheme, rest: f"{scheme}://{rest}",
            st.sampled_from(["sqlite", "postgresql", "postgres", "mysql", "sqlite+pysqlite"]),
            st.text(max_size=40),
        ),
        st.builds(
            lambda user, host, port, path: f"postgresql://{user}@{host}:{port}/{path}",
            st.text(max_size=8),
            st.text(max_size=8),
            st.text(max_size=8),
            st.text(max_size=8),
        ),
    )
)
def test_any_text_is_a_database_url_or_a_configuration_error(url: str) -> None:
    """What a person typed after ``--store`` never ends in a traceback."""
    with suppress(ConfigurationError):
        sqlalchemy_url(url)
