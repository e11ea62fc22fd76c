"""Engines for the SQL store: SQLite in WAL mode with immediate write transactions, or
PostgreSQL through psycopg 3 at read committed."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from sqlalchemy import Engine, create_engine, event
from sqlalchemy.engine import URL, make_url
from sqlalchemy.exc import ArgumentError

from keep_sdk.errors import ConfigurationError
from keep_sdk.stores._url import redacted_url
from keep_sdk.stores.sql._fast import run_driver_sql

__all__ = ["BUSY_TIMEOUT_S", "HELD_READERS", "WRITE", "create_store_engine", "sqlalchemy_url"]

WRITE = "keep_write"
"""Execution option: True makes SQLite begin with ``BEGIN IMMEDIATE`` (take the write lock
first, so two writers never both read and then fail to upgrade)."""

BUSY_TIMEOUT_S = "keep_busy_timeout_s"
"""Engine execution option (SQLite): the URL's ``busy_timeout`` in seconds, how long a write
waits for another to finish."""

_DEFAULT_BUSY_TIMEOUT_MS = 30_000

_POOL = 32
"""SQLite connections kept open for reuse (and as many more opened when busier): one per
lane of a worker and per thread reading, so none is opened and closed per transaction."""
HELD_READERS = _POOL // 2
"""SQLite threads that keep a connection of their own for reads (`HeldReaders`); the rest
of the pool serves writes and every other thread."""
_DEFAULT_JOURNAL_SIZE_LIMIT = 64 * 1024 * 1024
"""Bytes the WAL file is truncated back to after a checkpoint (it never stays at its
high-water mark)."""


def sqlalchemy_url(url: str) -> URL:
    """The SQLAlchemy URL for a store URL: ``postgresql://`` uses the psycopg 3 driver."""
    try:
        parsed = make_url(url)
    except (ArgumentError, ValueError) as exc:
        raise ConfigurationError(
            f"store URL {redacted_url(url)!r} is not a database URL: {exc}"
        ) from None
    backend = parsed.get_backend_name()
    if backend in ("postgresql", "postgres"):
        return parsed.set(drivername="postgresql+psycopg")
    if backend == "sqlite":
        if not parsed.database or parsed.database == ":memory:":
            raise ConfigurationError(
                f"store URL {url!r} names no file; use sqlite:///path/to/keep.db "
                "(or memory:// for a store that lives in this process only)"
            )
        return parsed.set(drivername="sqlite+pysqlite")
    raise ConfigurationError(
        f"the SQL store supports sqlite:// and postgresql:// URLs, not {backend}://"
    )


def _sqlite_engine(url: URL) -> Engine:
    options = dict(url.query)
    busy_ms = int(str(options.pop("busy_timeout", _DEFAULT_BUSY_TIMEOUT_MS)))
    synchronous = str(options.pop("synchronous", "FULL")).upper()
    journal_limit = _non_negative(options.pop("journal_size_limit", _DEFAULT_JOURNAL_SIZE_LIMIT))
    if synchronous not in ("OFF", "NORMAL", "FULL", "EXTRA"):
        raise ConfigurationError(f"sqlite synchronous={synchronous!r} is not a SQLite mode")
    url = url.set(query={})
    Path(str(url.database)).expanduser().parent.mkdir(parents=True, exist_ok=True)
    engine = create_engine(
        url, connect_args={"timeout": busy_ms / 1000}, pool_size=_POOL, max_overflow=_POOL
    )
    engine.update_execution_options(**{BUSY_TIMEOUT_S: busy_ms / 1000})

    @event.listens_for(engine, "connect")
    def configure(dbapi_connection: Any, _record: Any) -> None:
        dbapi_connection.isolation_level = None
        cursor = dbapi_connection.cursor()
        cursor.execute("PRAGMA journal_mode=WAL")
        cursor.execute("PRAGMA foreign_keys=ON")
        cursor.execute(f"PRAGMA busy_timeout={busy_ms}")
        cursor.execute(f"PRAGMA synchronous={synchronous}")
        cursor.execute(f"PRAGMA journal_size_limit={journal_limit}")
        cursor.close()

    @event.listens_for(engine, "begin")
    def begin(conn: Any) -> None:
        immediate = conn.get_execution_options().get(WRITE, True)
        run_driver_sql(conn, "BEGIN IMMEDIATE" if immediate else "BEGIN")

    return engine


def _non_negative(value: object) -> int:
    try:
        number = int(str(value))
    except ValueError:
        number = -1
    if number < 0:
        raise ConfigurationError(
            f"sqlite journal_size_limit={value!r} is not a number of bytes (0 or more)"
        )
    return number


def create_store_engine(url: str) -> Engine:
    """An engine configured for the store at `url`.

    SQLite: WAL journal, foreign keys on, busy timeout (``?busy_timeout=ms``,
    default 30 s), ``synchronous=FULL`` unless ``?synchronous=`` says otherwise,
    ``journal_size_limit`` 64 MiB (``?journal_size_limit=bytes``: the WAL is truncated
    back to it after each checkpoint), and ``BEGIN IMMEDIATE`` for writes. PostgreSQL:
    psycopg 3, read committed (commit points lock the rows they check with
    ``SELECT … FOR UPDATE``).
    """
    target = sqlalchemy_url(url)
    if target.get_backend_name() == "sqlite":
        return _sqlite_engine(target)
    return create_engine(target, isolation_level="READ COMMITTED", pool_pre_ping=True)
