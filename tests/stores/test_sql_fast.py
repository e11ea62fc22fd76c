"""The SQL store's fast statement path (`keep_sdk.stores.sql._fast`) is indistinguishable from
SQLAlchemy's: the same rows and values for the same data, every statement seen by the
engine's listeners, and the same errors, on SQLite and on a real PostgreSQL."""

from __future__ import annotations

import datetime as dt
import sqlite3
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sqlalchemy.exc import IntegrityError, OperationalError, StatementError

from keep_sdk.errors import NotFound
from keep_sdk.stores import Publication, SqlStore
from keep_sdk.stores.sql import _schema as t
from keep_sdk.stores.sql import _statements as q
from keep_sdk.stores.sql._fast import FastConnection, FastResult, StatementCache, run_driver_sql

ZONES = st.integers(min_value=-23 * 60 - 59, max_value=23 * 60 + 59).map(
    lambda minutes: dt.timezone(dt.timedelta(minutes=minutes))
)
MOMENTS = st.datetimes(
    min_value=dt.datetime(1970, 1, 2), max_value=dt.datetime(9998, 12, 30), timezones=ZONES
)
TEXT = st.text(
    alphabet=st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00"), max_size=12
)
JSON = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**53), max_value=2**53)
    | st.floats(allow_nan=False, allow_infinity=False)
    | TEXT,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(TEXT, inner, max_size=3),
    max_leaves=8,
)


def _maybe(strategy: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    return st.none() | strategy


@pytest.fixture(params=["sqlite", pytest.param("postgresql", marks=pytest.mark.postgres)])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[SqlStore]:
    if request.param == "sqlite":
        url = f"sqlite:///{tmp_path / 'keep.db'}"
    else:
        url = request.getfixturevalue("postgres_url")
    store = SqlStore(url)
    yield store
    store.close()


@pytest.fixture
def rolled_back(store: SqlStore) -> Iterator[tuple[sa.Connection, FastConnection]]:
    """A write transaction on `store` that is rolled back at the end, with its fast path."""
    with store.engine.connect() as conn, conn.begin() as tx:
        yield conn, FastConnection(conn, StatementCache(conn.dialect))
        tx.rollback()


@st.composite
def installations(draw: st.DrawFn) -> dict[str, Any]:
    """One workflow with grants, a handler with subscriptions, events, a run and its entry."""
    moment = draw(MOMENTS)
    topics = draw(st.lists(st.sampled_from(["a", "b", "ü-topic"]), unique=True, max_size=2))
    events = []
    for i in range(draw(st.integers(min_value=1, max_value=3))):
        reserved = draw(st.booleans())
        events.append(
            {
                "id": f"e{i}",
                "workflow": "wf",
                "topic": draw(st.sampled_from(["a", "b"])),
                "message_id": f"m{i}",
                "title": draw(TEXT),
                "payload": draw(JSON),
                "status": "reserved" if reserved else "pending",
                "reserved_by": "r1" if reserved else None,
                "created_by": draw(_maybe(TEXT)),
                "attempt": draw(st.integers(min_value=0, max_value=9)),
                "created_at": draw(MOMENTS),
                "updated_at": draw(MOMENTS),
            }
        )
    return {
        "workflow": {
            "name": "wf",
            "version": draw(st.integers(min_value=1, max_value=99)),
            "paused": draw(st.booleans()),
            "created_at": moment,
            "updated_at": draw(MOMENTS),
        },
        "grants": [
            {"workflow": "wf", "permission": p, "granted_at": moment}
            for p in draw(st.lists(st.sampled_from(["x.read", "y.write"]), unique=True))
        ],
        "handler": {
            "workflow": "wf",
            "name": "h",
            "kind": draw(st.sampled_from(["consumer", "producer"])),
            "version": 1,
            "has_state": draw(st.booleans()),
            "state": draw(JSON),
            "wake_at": draw(_maybe(MOMENTS)),
            "next_run_at": draw(_maybe(MOMENTS)),
            "updated_at": moment,
        },
        "subscriptions": [{"workflow": "wf", "handler": "h", "topic": topic} for topic in topics],
        "events": events,
        "run": {
            "id": "r1",
            "workflow": "wf",
            "workflow_version": 1,
            "handler": "h",
            "kind": "consumer",
            "phase": "prepared",
            "status": draw(st.sampled_from(["active", "committed", "failed"])),
            "retry_of": draw(_maybe(TEXT)),
            "prepare_result": draw(JSON),
            "mutation_result": draw(JSON),
            "input_state": draw(JSON),
            "output_state": draw(JSON),
            "error": draw(_maybe(TEXT)),
            "failure": draw(_maybe(st.sampled_from(["code", "transient"]))),
            "logs": draw(JSON),
            "created_at": draw(MOMENTS),
            "updated_at": draw(MOMENTS),
            "resume_at": draw(_maybe(MOMENTS)),
            "transient_failures": draw(st.integers(min_value=0, max_value=5)),
            "waiting_permission": draw(_maybe(TEXT)),
            "trace": draw(JSON),
        },
        "entry": {
            "id": "l1",
            "run_id": "r1",
            "workflow": "wf",
            "handler": "h",
            "connector": "sheets",
            "operation": "appendRow",
            "params": draw(JSON),
            "idempotency_key": draw(TEXT),
            "status": draw(st.sampled_from(["in_flight", "needs_reconcile"])),
            "result": draw(JSON),
            "error": draw(_maybe(TEXT)),
            "ui_title": draw(_maybe(TEXT)),
            "reconcile_attempts": draw(st.integers(min_value=0, max_value=5)),
            "next_reconcile_at": draw(_maybe(MOMENTS)),
            "resolved_by": draw(_maybe(TEXT)),
            "resolved_at": draw(_maybe(MOMENTS)),
            "created_at": draw(MOMENTS),
            "updated_at": draw(MOMENTS),
        },
    }


def _same(fast: Any, slow: sa.CursorResult[Any]) -> list[Any]:
    """The rows of both results, asserted equal by position, by name and by Python type."""
    assert isinstance(fast, FastResult), "the statement did not take the fast path"
    fast_rows, slow_rows = fast.all(), slow.all()
    assert [repr(tuple(r)) for r in fast_rows] == [repr(tuple(r)) for r in slow_rows]
    assert [r._asdict() for r in fast_rows] == [dict(r._mapping) for r in slow_rows]
    return fast_rows


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(data=installations())
def test_fast_and_sqlalchemy_paths_read_the_same_rows(
    rolled_back: tuple[sa.Connection, FastConnection], data: dict[str, Any]
) -> None:
    conn, fast = rolled_back
    savepoint = conn.begin_nested()
    try:
        conn.execute(sa.insert(t.workflows), data["workflow"])
        if data["grants"]:
            conn.execute(sa.insert(t.grants), data["grants"])
        conn.execute(sa.insert(t.handlers), data["handler"])
        if data["subscriptions"]:
            conn.execute(sa.insert(t.subscriptions), data["subscriptions"])
        assert fast.execute(q.INSERT_RUN, data["run"]).rowcount == 1
        assert fast.execute(q.INSERT_ENTRY, data["entry"]).rowcount == 1
        for event in data["events"]:
            assert fast.execute(q.insert_event(conn.dialect.name), event).first() is not None
        lookups: list[tuple[Any, dict[str, Any]]] = [
            (q.WORKFLOWS, {}),
            (q.ACTIVE_RUN, {"key_workflow": "wf"}),
            *((s, {"key_name": "wf"}) for s in q.WORKFLOW_BY_NAME),
            *((s, {"key_workflow": "wf", "key_name": "h"}) for s in q.HANDLER_BY_KEY),
            *((s, {"key_id": "r1"}) for s in q.RUN_BY_ID),
            *((s, {"key_id": "l1"}) for s in q.LEDGER_BY_ID),
            *((s, {"key_run": "r1"}) for s in q.LEDGER_BY_RUN),
            *((s, {"key_run": "r1"}) for s in q.RESERVED_BY_RUN),
            *((s, {"key_id": e["id"]}) for e in data["events"] for s in q.EVENT_BY_ID),
            *(
                (s, {"key_workflow": "wf", "key_topic": topic, **ids})
                for topic in ("a", "b")
                for lookup, ids in [
                    q.events_by_message_ids([e["message_id"] for e in data["events"]])
                ]
                for s in lookup
            ),
            *(
                (q.PENDING_EVENTS, {"key_workflow": "wf", "key_topic": topic, "key_limit": n})
                for topic in ("a", "b")
                for n in (1, 5)
            ),
            (q.LEASES, {}),
            (q.DUE_PRODUCERS, {"key_now": data["workflow"]["updated_at"]}),
            (q.CONSUMERS_TO_WAKE, {"key_now": data["workflow"]["created_at"]}),
            (q.DUE_RECONCILIATIONS, {"key_now": data["entry"]["created_at"]}),
            (
                q.runs_where(("workflow",), statuses=2, limited=True, newest_first=True),
                {"workflow": "wf", "status_0": "active", "status_1": "failed", "limit": 3},
            ),
            (
                q.runs_where(
                    ("workflow", "handler"), statuses=None, limited=False, newest_first=False
                ),
                {"workflow": "wf", "handler": "h"},
            ),
        ]
        for statement, params in lookups:
            _same(fast.execute(statement, params), conn.execute(statement, params))
        run = _same(
            fast.execute(q.RUN_BY_ID[0], {"key_id": "r1"}),
            conn.execute(q.RUN_BY_ID[0], {"key_id": "r1"}),
        )
        assert {k: v for k, v in run[0]._asdict().items() if k != "seq"} == data["run"]
        entry = fast.execute(q.LEDGER_BY_ID[0], {"key_id": "l1"}).first()
        assert {k: v for k, v in entry._asdict().items() if k != "seq"} == data["entry"]
    finally:
        savepoint.rollback()


@settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(data=installations(), changed=st.tuples(JSON, _maybe(MOMENTS), _maybe(TEXT)))
def test_a_fast_conditional_write_changes_exactly_the_row_still_as_read(
    rolled_back: tuple[sa.Connection, FastConnection],
    data: dict[str, Any],
    changed: tuple[Any, dt.datetime | None, str | None],
) -> None:
    conn, fast = rolled_back
    output, resume_at, error = changed
    savepoint = conn.begin_nested()
    try:
        conn.execute(sa.insert(t.workflows), data["workflow"])
        conn.execute(sa.insert(t.handlers), data["handler"])
        conn.execute(sa.insert(t.runs), data["run"])
        was = {"was_id": "r1", "was_phase": "prepared"}
        values = {"output_state": output, "resume_at": resume_at, "error": error}
        stale = fast.execute(q.WRITE_RUN, {**was, "was_status": "paused", **values})
        assert stale.rowcount == 0
        done = fast.execute(q.WRITE_RUN, {**was, "was_status": data["run"]["status"], **values})
        assert done.rowcount == 1
        row = conn.execute(sa.select(t.runs).where(t.runs.c.id == "r1")).one()
        assert (row.output_state, row.resume_at, row.error) == (output, resume_at, error)
        assert row.logs == data["run"]["logs"]
    finally:
        savepoint.rollback()


def test_the_engine_listeners_see_every_statement_the_database_runs(tmp_path: Path) -> None:
    """Ground truth from SQLite's trace callback: each statement it ran for a publish, a
    lookup and a page of pending events reached ``before_cursor_execute`` (statement and
    transaction counts rest on this); COMMIT comes from the driver's commit, counted by the
    engine's ``commit`` event, and the ``PRAGMA``s that set up a new connection come before
    SQLAlchemy has it. The trace is set on every connection the store opens, kept ones
    included."""
    ran: list[str] = []

    def traced(dbapi_connection: Any, _record: Any) -> None:
        dbapi_connection.set_trace_callback(ran.append)

    sa.event.listen(sa.pool.Pool, "connect", traced)
    store = SqlStore(f"sqlite:///{tmp_path / 'keep.db'}")
    try:
        store.deploy("wf", "source", {}, handlers=[])
        ran.clear()
        seen: list[str] = []
        commits: list[None] = []
        sa.event.listen(store.engine, "before_cursor_execute", lambda c, cur, s, *a: seen.append(s))
        sa.event.listen(store.engine, "commit", lambda c: commits.append(None))
        published = store.publish("wf", Publication(topic="t", message_id="m1", title="T"))
        assert store.get_event(published.event.id) is not None
        assert len(store.pending_events("wf", "t", limit=5)) == 1
        with pytest.raises(NotFound):
            store.get_run("no-such-run")
        by_driver = [
            s for s in ran if s not in ("COMMIT", "ROLLBACK") and not s.startswith("PRAGMA")
        ]
        assert len(seen) >= 8
        assert len(by_driver) == len(seen)
        assert [d.split()[:3] for d in by_driver] == [s.split()[:3] for s in seen]
        assert ran.count("COMMIT") == len(commits)
    finally:
        store.close()
        sa.event.remove(sa.pool.Pool, "connect", traced)


def test_listeners_get_the_connection_and_the_cursor_that_runs_the_statement(
    store: SqlStore, rolled_back: tuple[sa.Connection, FastConnection]
) -> None:
    """What tracing instrumentation reads: ``before_cursor_execute`` and
    ``after_cursor_execute`` get the `Connection`, the DBAPI cursor the statement ran on (one
    for every statement of the transaction), the SQL text, its bound values and
    ``executemany=False``."""
    conn, fast = rolled_back
    calls = _cursor_calls(store.engine)
    fast.execute(q.RUN_BY_ID[0], {"key_id": "r1"})
    fast.execute(q.RUN_BY_ID[0], {"key_id": "r2"})
    assert [call[0] for call in calls] == ["before_cursor_execute", "after_cursor_execute"] * 2
    assert all(call[1] is conn for call in calls)
    assert len({id(call[2]) for call in calls}) == 1
    assert isinstance(calls[0][2], conn.dialect.loaded_dbapi.Cursor)
    text = str(q.RUN_BY_ID[0].compile(dialect=conn.dialect))
    assert all(call[3] == text for call in calls)
    assert [list(_values(call[4])) for call in calls] == [["r1"], ["r1"], ["r2"], ["r2"]]
    assert all(call[5] is False for call in calls)


def _cursor_calls(engine: sa.Engine) -> list[tuple[Any, ...]]:
    """Each ``before_cursor_execute`` and ``after_cursor_execute`` call from now on: (event,
    connection, cursor, statement, parameters, executemany)."""
    calls: list[tuple[Any, ...]] = []
    for name in ("before_cursor_execute", "after_cursor_execute"):
        sa.event.listen(
            engine,
            name,
            lambda c, cursor, sql, bound, _, many, name=name: calls.append(
                (name, c, cursor, sql, bound, many)
            ),
        )
    return calls


def _values(bound: Any) -> Any:
    return bound.values() if isinstance(bound, dict) else bound


def test_a_constraint_violation_fails_alike_on_both_paths(
    rolled_back: tuple[sa.Connection, FastConnection],
) -> None:
    conn, fast = rolled_back
    moment = dt.datetime(2026, 1, 1, tzinfo=dt.UTC)
    workflow = {"name": "wf", "version": 1, "paused": False, "created_at": moment}
    conn.execute(sa.insert(t.workflows), {**workflow, "updated_at": moment})
    run = {
        "id": "r1",
        "workflow": "wf",
        "workflow_version": 1,
        "handler": "h",
        "kind": "consumer",
        "phase": "preparing",
        "status": "active",
        "retry_of": None,
        "prepare_result": None,
        "mutation_result": None,
        "input_state": None,
        "output_state": None,
        "error": None,
        "failure": None,
        "logs": [],
        "created_at": moment,
        "updated_at": moment,
        "resume_at": None,
        "transient_failures": 0,
        "waiting_permission": None,
        "trace": [],
    }
    fast.execute(q.INSERT_RUN, run)
    errors = []
    for path in (fast.execute, conn.execute):
        savepoint = conn.begin_nested()
        with pytest.raises(IntegrityError) as caught:
            path(q.INSERT_RUN, {**run, "id": "r2"})
        savepoint.rollback()
        errors.append(caught.value)
    fast_error, slow_error = errors
    assert type(fast_error.orig) is type(slow_error.orig)
    assert str(fast_error.orig) == str(slow_error.orig)
    assert fast_error.statement == slow_error.statement
    fast_params, slow_params = fast_error.params, slow_error.params
    if not isinstance(fast_params, dict):
        fast_params, slow_params = list(fast_params), list(slow_params)
    assert fast_params == slow_params
    assert "INSERT INTO keep_runs" in str(fast_error)
    assert fast.execute(q.RUN_BY_ID[0], {"key_id": "r1"}).first() is not None
    assert fast_error.connection_invalidated is slow_error.connection_invalidated is False


def test_a_naive_time_is_refused_alike_on_both_paths(
    rolled_back: tuple[sa.Connection, FastConnection],
) -> None:
    conn, fast = rolled_back
    params = {"key_id": "r1"}
    naive = {"was_workflow": "wf", "was_name": "h", "updated_at": dt.datetime(2026, 1, 1)}
    messages = []
    for path in (fast.execute, conn.execute):
        with pytest.raises(StatementError) as caught:
            path(q.WRITE_HANDLER, naive)
        assert isinstance(caught.value.orig, ValueError)
        messages.append((str(caught.value), caught.value.statement, caught.value.params))
    assert messages[0] == messages[1]
    assert messages[0][2] == [naive]
    assert fast.execute(q.RUN_BY_ID[0], params).first() is None


def test_statements_the_fast_path_cannot_run_go_through_sqlalchemy(
    rolled_back: tuple[sa.Connection, FastConnection],
) -> None:
    _, fast = rolled_back
    expanding = q.EVENTS_BY_MESSAGE_IDS[0]
    params = {"key_workflow": "wf", "key_topic": "t", "key_ids": ["a", "b"]}
    assert isinstance(fast.execute(expanding, params), sa.CursorResult)
    assert isinstance(fast.execute(q.RUN_BY_ID[0], {"key_id": "x"}), FastResult)


def test_a_constant_statement_is_compiled_once_per_parameter_set(
    rolled_back: tuple[sa.Connection, FastConnection], monkeypatch: pytest.MonkeyPatch
) -> None:
    """What the fast path is for: the second run of a statement reuses its plan; another
    statement with the same parameter names gets its own."""
    conn, _ = rolled_back
    cache = StatementCache(conn.dialect)
    compiled: list[int] = []
    compile_ = cache._compile

    def counting(statement: Any, names: tuple[str, ...]) -> Any:
        compiled.append(id(statement))
        return compile_(statement, names)

    monkeypatch.setattr(cache, "_compile", counting)
    fast = FastConnection(conn, cache)
    statements = [q.RUN_BY_ID[0], q.LEDGER_BY_ID[0], q.EVENT_BY_ID[0]]
    for _ in range(3):
        for statement in statements:
            fast.execute(statement, {"key_id": "x"})
    assert compiled == [id(statement) for statement in statements]
    assert cache.plan(q.RUN_BY_ID[0], ("key_id",)) is cache.plan(q.RUN_BY_ID[0], ("key_id",))


@pytest.mark.parametrize(
    "labels",
    [("class",), ("n", "n"), ("_hidden",), ("two words",), ("ok", "def")],
    ids=["keyword", "duplicate", "underscore", "not-an-identifier", "one-keyword-of-two"],
)
def test_result_columns_a_row_cannot_name_go_through_sqlalchemy(
    rolled_back: tuple[sa.Connection, FastConnection], labels: tuple[str, ...]
) -> None:
    """A row type needs identifier field names: other result names (a keyword, a repeat,
    a leading underscore) are answered by SQLAlchemy, with the same values."""
    _, fast = rolled_back
    statement = sa.select(*(sa.literal(i).label(label) for i, label in enumerate(labels)))
    result = fast.execute(statement)
    assert isinstance(result, sa.CursorResult)
    assert tuple(result.one()) == tuple(range(len(labels)))


def test_begin_reaches_listeners_and_fails_as_exec_driver_sql_does(tmp_path: Path) -> None:
    """``BEGIN IMMEDIATE`` (SQLite's write transactions) goes through `run_driver_sql`:
    listeners get what ``exec_driver_sql`` gives them, and a lock held elsewhere fails it
    with the same error."""
    path = tmp_path / "keep.db"
    store = SqlStore(f"sqlite:///{path}?busy_timeout=50")
    calls = _cursor_calls(store.engine)
    holder = sqlite3.connect(path, isolation_level=None)
    try:
        store.deploy("wf", "source", {}, handlers=[])
        begins = [call for call in calls if call[3] == "BEGIN IMMEDIATE"]
        assert [call[0] for call in begins] == ["before_cursor_execute", "after_cursor_execute"]
        assert all(isinstance(call[1], sa.Connection) for call in begins)
        assert begins[0][1] is begins[1][1]
        assert begins[0][2] is begins[1][2]
        assert isinstance(begins[0][2], sqlite3.Cursor)
        assert [(call[4], call[5]) for call in begins] == [((), False), ((), False)]
        holder.execute("BEGIN IMMEDIATE")
        errors = []
        runners: list[Callable[[sa.Connection], Any]] = [
            lambda conn: run_driver_sql(conn, "BEGIN IMMEDIATE"),
            lambda conn: conn.exec_driver_sql("BEGIN IMMEDIATE"),
        ]
        for run in runners:
            with store.engine.connect() as conn, pytest.raises(OperationalError) as caught:
                run(conn)
            errors.append(caught.value)
        fast, slow = errors
        assert (fast.statement, str(fast.orig)) == (slow.statement, str(slow.orig))
        assert fast.statement == "BEGIN IMMEDIATE"
        assert list(fast.params) == list(slow.params) == []
    finally:
        holder.close()
        store.close()


_PROBE = sa.Table(
    "fast_path_probe",
    sa.MetaData(),
    sa.Column("id", sa.Integer, primary_key=True),
    sa.Column("v", sa.String(10), default=lambda: "made", onupdate=lambda: "changed"),
    sa.Column("w", sa.String(10)),
)
_ID = _PROBE.c.id

_NEEDS_SQLALCHEMY: dict[str, tuple[Any, dict[str, Any]]] = {
    "a Python-side default on insert": (sa.insert(_PROBE), {"id": 2}),
    "a Python-side default on update": (
        sa.update(_PROBE).where(sa.bindparam("key") == _ID).values(w="x"),
        {"key": 1},
    ),
    "a literal-execute parameter": (
        sa.select(_PROBE).where(sa.bindparam("key", literal_execute=True, type_=sa.Integer) == _ID),
        {"key": 1},
    ),
    "an expanding parameter": (
        sa.select(_PROBE).where(_ID.in_(sa.bindparam("keys", expanding=True))),
        {"keys": [1]},
    ),
    "a callable parameter": (
        sa.select(_PROBE).where(sa.bindparam("key", callable_=lambda: 1) == _ID),
        {},
    ),
    "a parameter named with a quote and a space": (
        sa.select(_PROBE).where(sa.bindparam("the 'key'") == _ID),
        {"the 'key'": 1},
    ),
    "a value given that the statement does not bind": (
        sa.select(_PROBE).where(sa.bindparam("key") == _ID),
        {"key": 1, "other": 2},
    ),
}


@pytest.mark.parametrize("case", sorted(_NEEDS_SQLALCHEMY))
def test_every_statement_the_fast_path_cannot_run_as_sqlalchemy_would_goes_through_it(
    rolled_back: tuple[sa.Connection, FastConnection], case: str
) -> None:
    conn, fast = rolled_back
    _PROBE.create(conn)
    conn.execute(sa.insert(_PROBE), {"id": 1})
    statement, params = _NEEDS_SQLALCHEMY[case]
    result = fast.execute(statement, params)
    assert isinstance(result, sa.CursorResult), case
    if result.returns_rows:
        assert [tuple(row) for row in result] == [(1, "made", None)]
    table = [tuple(row) for row in conn.execute(sa.select(_PROBE).order_by(_ID))]
    assert table == _LEFT.get(case, [(1, "made", None)])


_LEFT = {
    "a Python-side default on insert": [(1, "made", None), (2, "made", None)],
    "a Python-side default on update": [(1, "changed", "x")],
}


def test_a_required_value_left_out_is_refused_as_sqlalchemy_refuses_it(
    rolled_back: tuple[sa.Connection, FastConnection],
) -> None:
    _, fast = rolled_back
    statement = sa.select(_PROBE).where(sa.bindparam("key", required=True) == _ID)
    with pytest.raises(StatementError, match="A value is required for bind parameter 'key'"):
        fast.execute(statement, {})
