"""The planner's scans (deadlines, due polls, the pending inbox) read their partial indexes on
PostgreSQL also as prepared statements with a generic plan, which psycopg switches to after a
statement's fifth run; a bound status value would make that plan a sequential scan."""

from __future__ import annotations

import datetime as dt
import re
import uuid
from collections.abc import Callable
from typing import Any

import psycopg
import pytest
from sqlalchemy import event

from keep_sdk.conformance.postgres import PostgresServer
from keep_sdk.stores import SqlStore

pytestmark = pytest.mark.postgres

NOW = dt.datetime(2026, 11, 22, 9, 0, tzinfo=dt.UTC)

SCANS: dict[str, tuple[Callable[[SqlStore], object], str]] = {
    "expired_invocations": (lambda s: s.expired_invocations(NOW), "ix_invocations_timeout"),
    "due_polls": (lambda s: s.due_polls(NOW), "ix_invocations_poll"),
    "deliverable_notifications": (
        lambda s: s.deliverable_notifications(),
        "ix_notifications_pending",
    ),
}


@pytest.fixture
def url(postgres_server: PostgresServer) -> str:
    return postgres_server.create_database(f"plans_{uuid.uuid4().hex[:12]}")


def _statement(store: SqlStore, scan: Callable[[SqlStore], object], table: str) -> str:
    """The SQL the store sends for `scan` that reads `table`, as a PREPARE-able text."""
    sent: list[tuple[str, Any]] = []

    def record(conn: Any, cursor: Any, statement: str, parameters: Any, *_: Any) -> None:
        sent.append((statement, parameters))

    event.listen(store.engine, "before_cursor_execute", record)
    try:
        scan(store)
    finally:
        event.remove(store.engine, "before_cursor_execute", record)
    [(statement, _)] = [(s, p) for s, p in sent if f"FROM {table}" in s]
    names: list[str] = []

    def number(match: re.Match[str]) -> str:
        names.append(match.group(1))
        return f"${len(names)}"

    return re.sub(r"%\((\w+)\)s", number, statement)


@pytest.mark.parametrize("name", list(SCANS))
def test_a_scan_uses_its_partial_index_in_a_generic_plan(url: str, name: str) -> None:
    scan, index = SCANS[name]
    store = SqlStore(url)
    try:
        table = "keep_notifications" if "notifications" in name else "keep_invocations"
        statement = _statement(store, scan, table)
    finally:
        store.close()
    arity = statement.count("$")
    with psycopg.connect(url.replace("postgresql+psycopg://", "postgresql://")) as conn:
        conn.execute("SET plan_cache_mode = force_generic_plan")
        conn.execute("SET enable_seqscan = off")
        conn.execute(f"PREPARE scan AS {statement}")
        args = ", ".join("NULL" for _ in range(arity))
        plan = "\n".join(
            str(row[0]) for row in conn.execute(f"EXPLAIN EXECUTE scan({args})").fetchall()
        )
    assert index in plan, plan
