"""`keep status` answers from indexes, whatever the history.

The report's statements are counted with SQLAlchemy's cursor events on a real
SQLite file, with a small store and one with thousands of runs, ledger entries
and events of history: the count must not change, and ``EXPLAIN QUERY PLAN``
must show no statement reading a table of history row by row (the counts by
status read covering indexes, and the partial index of pending events, which
holds the backlog, not history). The report from indexes equals
the report read in full.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa

from keep_sdk.model import Event, EventStatus
from keep_sdk.scheduler import Scheduler
from keep_sdk.status import build_status
from keep_sdk.stores import Publication, SqlStore, Store, utc_now
from tests.scheduler.test_planning_cost import (
    HISTORY_TABLES,
    add_history,
    installation,
)


class Counted:
    """Every statement the engine runs while inside the block."""

    def __init__(self, store: SqlStore) -> None:
        self.store = store
        self.seen: list[tuple[str, Any]] = []

    def _record(self, conn: Any, cursor: Any, statement: str, params: Any, *rest: Any) -> None:
        self.seen.append((statement, params))

    def __enter__(self) -> Counted:
        sa.event.listen(self.store.engine, "before_cursor_execute", self._record)
        return self

    def __exit__(self, *exc: object) -> None:
        sa.event.remove(self.store.engine, "before_cursor_execute", self._record)


def consumed_events(store: SqlStore, workflow: str, count: int) -> None:
    """`count` consumed events of history, loaded at once."""
    now = utc_now()
    store.bulk_load_events(
        workflow,
        [
            Event(
                id=f"evt_history_{i}",
                workflow=workflow,
                topic="job.queued",
                message_id=f"history-{i}",
                title=f"old job {i}",
                payload={},
                status=EventStatus.CONSUMED,
                created_at=now,
                updated_at=now,
            )
            for i in range(count)
        ],
    )


def waiting_store(path: Path, history: int) -> tuple[SqlStore, Scheduler]:
    """Three workflows; w1 waits for a permission; `history` runs, entries and events."""
    store, scheduler = installation(path, 3)
    store.revoke_permission("w1", "sheets.write", actor="test")
    store.publish("w1", Publication(topic="job.queued", message_id="needs-grant", title="job"))
    scheduler.run_until_idle()
    if history:
        add_history(store, history)
        consumed_events(store, "w0", history)
    return store, scheduler


def report(store: Store) -> Any:
    return build_status(store, store_url="sqlite:///x", now=utc_now(), limit=5)


@pytest.fixture
def stores(tmp_path: Path) -> Any:
    opened: list[SqlStore] = []

    def make(name: str, history: int) -> SqlStore:
        store, _ = waiting_store(tmp_path / f"{name}.db", history)
        opened.append(store)
        return store

    yield make
    for store in opened:
        store.close()


def test_the_status_report_runs_the_same_statements_whatever_the_history(stores: Any) -> None:
    small, large = stores("small", 0), stores("large", 5_000)
    with Counted(small) as few:
        small_report = report(small)
    with Counted(large) as many:
        large_report = report(large)
    assert len(few.seen) == len(many.seen), (len(few.seen), len(many.seen))
    waits = {w.name: [x.why for x in w.waiting] for w in large_report.workflows}
    assert any("sheets.write" in why for why in waits["w1"]), waits
    assert waits == {w.name: [x.why for x in w.waiting] for w in small_report.workflows}
    counts = {w.name: w.events for w in large_report.workflows}
    assert counts["w0"]["consumed"] == 5_000 + 3


def test_no_status_statement_reads_the_rows_of_history(stores: Any) -> None:
    store = stores("plans", 2_000)
    with Counted(store) as counted:
        report(store)
    with store.engine.connect() as conn:
        raw = conn.connection.driver_connection
        assert raw is not None
        for statement, params in counted.seen:
            if not statement.lstrip().upper().startswith("SELECT"):
                continue
            plan = raw.execute(f"EXPLAIN QUERY PLAN {statement}", params).fetchall()
            details = [str(row[-1]) for row in plan]
            scans = [
                d
                for d in details
                if d.startswith("SCAN ")
                and d.split()[1] in HISTORY_TABLES
                and "COVERING INDEX" not in d
                and "USING INDEX ix_events_pending" not in d
            ]
            assert not scans, f"{statement}\nreads history: {scans}"


class FullRead:
    """The store without its counts and pages: the report falls back to reading it all."""

    _HIDDEN = frozenset(
        {
            "count_by_status",
            "page_events",
            "page_runs",
            "page_ledger",
            "runs_by_ids",
            "ledger_for_runs",
            "events_published_by",
        }
    )

    def __init__(self, store: SqlStore) -> None:
        self._store = store

    def __getattr__(self, name: str) -> Any:
        if name in self._HIDDEN:
            raise AttributeError(name)
        return getattr(self._store, name)


def test_the_report_from_indexes_equals_the_report_read_in_full(stores: Any) -> None:
    store = stores("equal", 300)
    store.publish("w2", Publication(topic="job.queued", message_id="late", title="late job"))
    indexed, full = report(store), report(FullRead(store))  # type: ignore[arg-type]
    assert indexed.model_dump() == full.model_dump()
    assert [i.title for i in indexed.workflows[0].inputs][-1] == "old job 299"
