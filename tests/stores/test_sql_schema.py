"""The SQL schema: database-enforced invariants, the pending index, the schema version."""

from __future__ import annotations

import datetime as dt
import sqlite3
from collections.abc import Iterator
from contextlib import closing
from pathlib import Path

import pytest
import sqlalchemy as sa
from sqlalchemy.exc import IntegrityError

from keep_sdk.errors import SchemaVersionError
from keep_sdk.model import (
    Event,
    EventStatus,
    HandlerKind,
    HandlerPhase,
    PhaseTrace,
    RunPhase,
    RunStatus,
    TraceCall,
)
from keep_sdk.stores import HandlerSpec, Publication, SqlStore
from keep_sdk.stores.sql import _schema

NOW = dt.datetime(2026, 11, 22, 8, 0, tzinfo=dt.UTC)


@pytest.fixture(params=["sqlite", pytest.param("postgresql", marks=pytest.mark.postgres)])
def sql_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path}/keep.db"
    server = request.getfixturevalue("postgres_server")
    return str(server.create_database("keep_schema"))


@pytest.fixture
def store(sql_url: str) -> Iterator[SqlStore]:
    store = SqlStore(sql_url, clock=lambda: NOW)
    yield store
    store.close()


def _workflow(store: SqlStore) -> str:
    store.deploy(
        "wf",
        "src",
        {},
        handlers=[HandlerSpec(name="c", kind=HandlerKind.CONSUMER, subscribe=["in"])],
    )
    return "wf"


def test_a_new_database_gets_the_current_schema_version(store: SqlStore) -> None:
    with store.engine.connect() as conn:
        version = conn.execute(sa.select(_schema.schema_info.c.version)).scalar_one()
    assert version == _schema.SCHEMA_VERSION
    assert set(store.count_rows()) == {t.name for t in _schema.metadata.sorted_tables}


def test_the_database_allows_one_active_run_per_workflow(store: SqlStore) -> None:
    wf = _workflow(store)
    run = store.begin_run(wf, "c", HandlerKind.CONSUMER)
    row = {
        "id": "run_second",
        "workflow": wf,
        "workflow_version": 1,
        "handler": "c",
        "kind": "consumer",
        "phase": "preparing",
        "status": "active",
        "prepare_result": None,
        "mutation_result": None,
        "input_state": None,
        "output_state": None,
        "logs": [],
        "created_at": NOW,
        "updated_at": NOW,
    }
    with pytest.raises(IntegrityError), store.engine.begin() as conn:
        conn.execute(_schema.runs.insert().values(**row))
    with store.engine.begin() as conn:
        conn.execute(_schema.runs.insert().values(**{**row, "status": "paused:transient"}))
    assert [r.id for r in store.active_runs()] == [run.id]


def test_the_database_allows_one_ledger_entry_per_run(store: SqlStore) -> None:
    wf = _workflow(store)
    store.publish(wf, Publication(topic="in", message_id="m", title="t"))
    run = store.begin_run(wf, "c", HandlerKind.CONSUMER)
    from keep_sdk.model import PrepareResult, Reservation

    store.save_prepare_result(
        run.id, PrepareResult(reservations=[Reservation(topic="in", ids=["m"])])
    )
    store.advance_phase(run.id, RunPhase.MUTATING)
    entry = store.record_mutation_intent(
        run.id, connector="c", operation="o", params={}, idempotency_key="k"
    )
    with store.engine.connect() as conn:
        row = dict(conn.execute(sa.select(_schema.ledger)).mappings().one())
    row.pop("seq")
    with pytest.raises(IntegrityError), store.engine.begin() as conn:
        conn.execute(_schema.ledger.insert().values(**{**row, "id": "mut_other"}))
    assert store.list_ledger(workflow=wf) == [entry]


def test_the_database_keeps_one_event_per_workflow_topic_and_message_id(store: SqlStore) -> None:
    wf = _workflow(store)
    store.publish(wf, Publication(topic="in", message_id="m", title="t"))
    with store.engine.connect() as conn:
        row = dict(conn.execute(sa.select(_schema.events)).mappings().one())
    row.pop("seq")
    with pytest.raises(IntegrityError), store.engine.begin() as conn:
        conn.execute(_schema.events.insert().values(**{**row, "id": "evt_other"}))
    with pytest.raises(IntegrityError), store.engine.begin() as conn:
        conn.execute(
            _schema.events.insert().values(
                **{**row, "id": "evt_x", "message_id": "x", "status": "reserved"}
            )
        )


def test_peek_reads_the_partial_pending_index(store: SqlStore) -> None:
    wf = _workflow(store)
    store.bulk_load_events(
        wf,
        [
            Event(
                id=f"evt_{i}",
                workflow=wf,
                topic="in",
                message_id=f"m{i}",
                title="t",
                status=EventStatus.CONSUMED,
                reserved_by="run_old",
                created_at=NOW,
                updated_at=NOW,
            )
            for i in range(5000)
        ],
    )
    store.publish(wf, Publication(topic="in", message_id="new", title="t"))
    plan = store.explain_pending(wf, "in", limit=10)
    assert "ix_events_pending" in plan, plan
    assert [e.message_id for e in store.pending_events(wf, "in", limit=10)] == ["new"]


def test_a_newer_schema_is_refused(sql_url: str, store: SqlStore) -> None:
    with store.engine.begin() as conn:
        conn.execute(_schema.schema_info.update().values(version=_schema.SCHEMA_VERSION + 1))
    with pytest.raises(SchemaVersionError, match="newer"):
        SqlStore(sql_url)


def test_an_older_schema_is_upgraded_step_by_step(
    sql_url: str, store: SqlStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    def add_notes(conn: sa.Connection) -> None:
        conn.execute(sa.text("CREATE TABLE keep_notes (id INTEGER PRIMARY KEY)"))

    current = _schema.SCHEMA_VERSION
    monkeypatch.setattr(_schema, "SCHEMA_VERSION", current + 1)
    monkeypatch.setitem(_schema.UPGRADES, current, add_notes)
    upgraded = SqlStore(sql_url)
    with upgraded.engine.connect() as conn:
        version = conn.execute(sa.select(_schema.schema_info.c.version)).scalar_one()
        assert version == current + 1
        assert sa.inspect(conn).has_table("keep_notes")
    upgraded.close()


def test_a_missing_upgrade_step_is_refused(
    sql_url: str, store: SqlStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    current = _schema.SCHEMA_VERSION
    monkeypatch.setattr(_schema, "SCHEMA_VERSION", current + 1)
    with pytest.raises(SchemaVersionError, match=f"no upgrade step from schema version {current}"):
        SqlStore(sql_url)


def test_keep_tables_without_a_version_are_refused(sql_url: str, store: SqlStore) -> None:
    with store.engine.begin() as conn:
        conn.execute(sa.text("DROP TABLE keep_schema"))
    with pytest.raises(SchemaVersionError, match="no keep_schema"):
        SqlStore(sql_url)


class _Orig(Exception):
    pass


@pytest.mark.parametrize(
    ("message", "expected"),
    [
        ("UNIQUE constraint failed: keep_runs.workflow", "ActiveRunExists"),
        ('duplicate key value violates unique constraint "uq_runs_one_active"', "ActiveRunExists"),
        ("UNIQUE constraint failed: keep_ledger.run_id", "MutationConflict"),
        ('duplicate key value violates unique constraint "uq_ledger_run"', "MutationConflict"),
        ("CHECK constraint failed: ck_events_status", "StoreConflict"),
    ],
)
def test_constraint_violations_by_concurrent_writers_become_conflicts(
    message: str, expected: str
) -> None:
    from keep_sdk.stores.sql.store import _translate

    error = _translate(IntegrityError("INSERT …", {}, _Orig(message)))
    assert type(error).__name__ == expected


def test_a_database_written_by_schema_version_1_opens_and_upgrades(tmp_path: Path) -> None:
    dump = Path(__file__).parent / "data" / "keep_schema_v1.sql"
    path = tmp_path / "old.db"
    with closing(sqlite3.connect(path)) as raw:
        raw.executescript(dump.read_text())
    assert _schema.SCHEMA_VERSION >= 3
    store = SqlStore(f"sqlite:///{path}", clock=lambda: NOW)
    try:
        with store.engine.connect() as conn:
            version = conn.execute(sa.select(_schema.schema_info.c.version)).scalar_one()
            assert version == _schema.SCHEMA_VERSION
            inspector = sa.inspect(conn)
            indexes = {i["name"] for i in inspector.get_indexes("keep_runs")}
            assert {"ix_runs_status", "ix_runs_handler", "ix_runs_retry_of"} <= indexes
            indexes = {i["name"] for i in inspector.get_indexes("keep_events")}
            assert {"ix_events_workflow_seq", "ix_events_created_by"} <= indexes
            assert store.list_invocations() == []
        (paused,) = store.list_runs(workflow="mail")
        assert paused.status is RunStatus.PAUSED_APPROVAL
        assert (paused.transient_failures, paused.waiting_permission) == (1, "sheets.write")
        resumed = store.set_run_status(paused.id, RunStatus.ACTIVE)
        assert (resumed.transient_failures, resumed.waiting_permission) == (1, None)
        again = store.set_run_status(paused.id, RunStatus.PAUSED_TRANSIENT, resume_at=NOW)
        assert store.get_run(paused.id) == again
        assert again.transient_failures == 2
        assert [e.message_id for e in store.pending_events("mail", "in", limit=5)] == ["m1"]
        fresh = store.begin_run("mail", "c", HandlerKind.CONSUMER)
        assert fresh.transient_failures == 0
    finally:
        store.close()


def test_the_run_facts_upgrade_reads_them_from_the_version_1_text(sql_url: str) -> None:
    store = SqlStore(sql_url, clock=lambda: NOW)
    wf = _workflow(store)
    waiting = store.begin_run(wf, "c", HandlerKind.CONSUMER)
    store.set_run_status(
        waiting.id,
        RunStatus.PAUSED_APPROVAL,
        error="ctx.sheets.appendRow needs the permission 'sheets.write', which workflow 'wf' "
        "has not been granted",
        logs=["host: transient failure 1: 503", "host: transient failure 2: 503"],
    )
    with store.engine.begin() as conn:
        conn.execute(sa.text("ALTER TABLE keep_runs DROP COLUMN transient_failures"))
        conn.execute(sa.text("ALTER TABLE keep_runs DROP COLUMN waiting_permission"))
        conn.execute(sa.text("ALTER TABLE keep_runs DROP COLUMN trace"))
        conn.execute(_schema.schema_info.update().values(version=1))
    store.close()
    upgraded = SqlStore(sql_url, clock=lambda: NOW)
    try:
        run = upgraded.get_run(waiting.id)
        assert (run.transient_failures, run.waiting_permission) == (2, "sheets.write")
    finally:
        upgraded.close()


def test_a_version_2_database_gains_run_traces_and_keeps_its_runs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    dump = Path(__file__).parent / "data" / "keep_schema_v1.sql"
    path = tmp_path / "old.db"
    with closing(sqlite3.connect(path)) as raw:
        raw.executescript(dump.read_text())
    with monkeypatch.context() as patched:
        patched.setattr(_schema, "SCHEMA_VERSION", 2)
        SqlStore(f"sqlite:///{path}", clock=lambda: NOW).close()
    with closing(sqlite3.connect(path)) as raw:
        columns = [row[1] for row in raw.execute("PRAGMA table_info(keep_runs)")]
    assert "trace" not in columns
    store = SqlStore(f"sqlite:///{path}", clock=lambda: NOW)
    try:
        (paused,) = store.list_runs(workflow="mail")
        assert paused.trace == []
        traced = PhaseTrace(
            phase=HandlerPhase.PREPARE,
            calls=[TraceCall(operation="peek", arguments={"topic": "in"}, status="ok", result=[])],
        )
        resumed = store.set_run_status(paused.id, RunStatus.ACTIVE)
        again = store.set_run_status(
            resumed.id, RunStatus.PAUSED_TRANSIENT, resume_at=NOW, trace=[traced]
        )
        assert store.get_run(paused.id).trace == [traced] == again.trace
    finally:
        store.close()


def test_rows_examined_counts_every_node_of_a_postgresql_plan() -> None:
    """`peek_cost` on PostgreSQL: rows each plan node produced (times its loops) plus the
    rows its filter and index recheck threw away, over the whole tree."""
    from keep_sdk.stores.sql.store import _rows_examined

    plan = {
        "Node Type": "Limit",
        "Actual Rows": 3,
        "Plans": [
            {
                "Node Type": "Nested Loop",
                "Actual Rows": 2,
                "Actual Loops": 4,
                "Rows Removed by Filter": 5,
                "Plans": [
                    {
                        "Node Type": "Bitmap Heap Scan",
                        "Actual Rows": 7,
                        "Rows Removed by Index Recheck": 11,
                    },
                    {"Node Type": "Index Scan", "Actual Rows": 1, "Actual Loops": 13},
                ],
            }
        ],
    }
    assert _rows_examined(plan) == 3 + (2 * 4 + 5) + (7 + 11) + 1 * 13
    assert _rows_examined({"Node Type": "Result"}) == 0
