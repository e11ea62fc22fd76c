"""The commit points' conditional writes (issue 32): the SQL store reserves, consumes and
saves state with one ``UPDATE`` each, and still refuses exactly what it refused before.

`JsonFileStore` runs the `Transaction` defaults (read, then write row by row: the
algorithm the SQL store ran before), so every outcome is compared with it: the same
error with the same message, and the same events afterwards.
"""

from __future__ import annotations

import datetime as dt
import re
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
import sqlalchemy as sa
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from keep_sdk.errors import KeepError
from keep_sdk.model import (
    EventStatus,
    FailureKind,
    HandlerKind,
    HandlerPhase,
    MutationNone,
    PhaseTrace,
    PrepareResult,
    Reservation,
    RunPhase,
    RunRecord,
    RunStatus,
)
from keep_sdk.stores import HandlerSpec, MemoryStore, Publication, SqlStore, TransactionalStore
from keep_sdk.stores.sql import _rows as rows
from tests.stores.json_file_store import JsonFileStore

HANDLERS = [HandlerSpec(name="c", kind=HandlerKind.CONSUMER, subscribe=["in"])]
STATES = ("pending", "taken", "consumed", "skipped", "missing")
"""What a requested event is when the run reserves it: ``taken`` is held by a crashed run."""


def _stores(directory: Path) -> list[TransactionalStore]:
    return [
        MemoryStore(),
        SqlStore(f"sqlite:///{directory / 'k.db'}"),
        JsonFileStore(directory / "k.json"),
    ]


def _reserve(store: TransactionalStore, ids: list[str]) -> str:
    run = store.begin_run("wf", "c", HandlerKind.CONSUMER)
    store.save_prepare_result(
        run.id, PrepareResult(reservations=[Reservation(topic="in", ids=ids)])
    )
    return run.id


def _arrange(store: TransactionalStore, states: list[str]) -> list[str]:
    """Events e0… in `states`; the ids a run then asks for, in order."""
    store.deploy("wf", "src", {}, handlers=HANDLERS)
    ids = [f"e{i}" for i in range(len(states))]
    for mid, state in zip(ids, states, strict=True):
        if state != "missing":
            store.publish("wf", Publication(topic="in", message_id=mid, title=mid))
    for mid, state in zip(ids, states, strict=True):
        if state == "taken":
            store.set_run_status(_reserve(store, [mid]), RunStatus.CRASHED)
        elif state == "consumed":
            store.commit_consumer_run(_reserve(store, [mid]), mutation_result=MutationNone())
        elif state == "skipped":
            [event] = store.events_by_ids("wf", "in", [mid])
            store.skip_event(event.id, actor="alice")
    return ids


def _outcome(store: TransactionalStore, ids: list[str]) -> tuple[str, list[tuple[str, str]]]:
    """The error (run ids blanked) or "ok", and every event's (messageId, status)."""
    try:
        run = _reserve(store, ids)
        store.commit_consumer_run(run, state={"n": 1}, mutation_result=MutationNone())
        said = "ok"
    except KeepError as error:
        said = f"{type(error).__name__}: {re.sub(r'run_[0-9a-z]+', 'run', str(error))}"
    events = sorted((e.message_id, e.status.value) for e in store.events_by_ids("wf", "in", ids))
    return said, events


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.sampled_from(STATES), min_size=1, max_size=4))
def test_a_reservation_reserves_all_or_fails_whole_with_the_message_of_the_row_by_row_path(
    states: list[str],
) -> None:
    with tempfile.TemporaryDirectory() as directory:
        stores = _stores(Path(directory))
        try:
            outcomes = [_outcome(s, _arrange(s, states)) for s in stores]
        finally:
            for store in stores:
                store.close()
    assert outcomes[0] == outcomes[1] == outcomes[2], outcomes
    said, events = outcomes[0]
    if all(state == "pending" for state in states):
        assert said == "ok"
        assert {status for _, status in events} == {EventStatus.CONSUMED.value}
    else:
        assert said != "ok"
        pending = [
            mid for mid, state in zip(_ids(states), states, strict=True) if state == "pending"
        ]
        assert all(status == "pending" for mid, status in events if mid in pending), events


def _ids(states: list[str]) -> list[str]:
    return [f"e{i}" for i in range(len(states))]


@pytest.fixture
def sqlite(tmp_path: Path) -> Iterator[SqlStore]:
    store = SqlStore(f"sqlite:///{tmp_path / 'k.db'}")
    store.deploy("wf", "src", {}, handlers=HANDLERS)
    yield store
    store.close()


def _statements(store: SqlStore, call: Callable[[], object]) -> list[str]:
    sent: list[str] = []

    def listen(conn: object, cursor: object, statement: str, *rest: object) -> None:
        if not statement.startswith(("BEGIN", "COMMIT")):
            sent.append(statement)

    sa.event.listen(store.engine, "before_cursor_execute", listen)
    try:
        call()
    finally:
        sa.event.remove(store.engine, "before_cursor_execute", listen)
    return sent


@pytest.mark.parametrize("count", [1, 5])
def test_reserving_and_consuming_take_the_same_statements_for_one_event_or_many(
    sqlite: SqlStore, count: int
) -> None:
    ids = [f"e{i}" for i in range(count)]
    for mid in ids:
        sqlite.publish("wf", Publication(topic="in", message_id=mid, title=mid))
    run = sqlite.begin_run("wf", "c", HandlerKind.CONSUMER)
    prepared = PrepareResult(reservations=[Reservation(topic="in", ids=ids)])
    reserving = _statements(sqlite, lambda: sqlite.save_prepare_result(run.id, prepared))
    committing = _statements(
        sqlite,
        lambda: sqlite.commit_consumer_run(
            run.id,
            state={"n": 1},
            mutation_result=MutationNone(),
            publishes=[Publication(topic="out", message_id="o", title="o")],
        ),
    )
    event_writes = [s for s in reserving + committing if s.startswith("UPDATE keep_events")]
    assert len(event_writes) == 2, event_writes
    assert not any(s.startswith("SELECT keep_handlers") for s in committing), committing
    assert not any(s.startswith("SELECT keep_events") for s in committing), committing
    [run_write] = [s for s in committing if s.startswith("UPDATE keep_runs")]
    assert "prepare_result" not in run_write.split("WHERE")[0], run_write
    events = sqlite.events_by_ids("wf", "in", ids)
    assert [e.status for e in events] == [EventStatus.CONSUMED] * count
    assert all(e.reserved_by == run.id for e in events)


def test_a_duplicate_publish_in_a_commit_reads_the_existing_event_and_keeps_it(
    sqlite: SqlStore,
) -> None:
    sqlite.publish("wf", Publication(topic="out", message_id="o", title="first"))
    run = sqlite.begin_run("wf", "c", HandlerKind.CONSUMER)
    sqlite.save_prepare_result(run.id, PrepareResult(reservations=[]))
    done = sqlite.commit_consumer_run(
        run.id,
        mutation_result=MutationNone(),
        publishes=[Publication(topic="out", message_id="o", title="second")],
    )
    [event] = sqlite.events_by_ids("wf", "out", ["o"])
    assert done.published[0].event.id == event.id
    assert event.title == "second"


_RUN_CHANGES = {
    "phase": st.sampled_from(list(RunPhase)),
    "status": st.sampled_from(list(RunStatus)),
    "prepare_result": st.just(PrepareResult(reservations=[], data={"n": 1})),
    "mutation_result": st.just(MutationNone()),
    "output_state": st.sampled_from([None, {"n": 2}, [1]]),
    "error": st.sampled_from([None, "boom"]),
    "failure": st.sampled_from([None, *FailureKind]),
    "logs": st.just(["prepare log: hi"]),
    "updated_at": st.just(dt.datetime(2026, 11, 28, tzinfo=dt.UTC)),
    "resume_at": st.sampled_from([None, dt.datetime(2026, 11, 29, tzinfo=dt.UTC)]),
    "transient_failures": st.integers(min_value=0, max_value=3),
    "waiting_permission": st.sampled_from([None, "sheets.write"]),
    "trace": st.just([PhaseTrace(phase=HandlerPhase.PREPARE, calls=[], wall_time_s=0.1)]),
}


@given(st.fixed_dictionaries({}, optional=_RUN_CHANGES))
def test_an_updated_run_writes_exactly_the_columns_its_update_changed(
    changes: dict[str, object],
) -> None:
    """`changed_run_values` builds only the changed columns' values; they are what
    dumping every column and keeping the changed ones gives (the old path)."""
    before = RunRecord(
        id="r1",
        workflow="wf",
        workflow_version=1,
        handler="c",
        kind=HandlerKind.CONSUMER,
        created_at=dt.datetime(2026, 11, 27, tzinfo=dt.UTC),
        updated_at=dt.datetime(2026, 11, 27, tzinfo=dt.UTC),
    )
    after = before.model_copy(update=changes)
    assert rows.changed_run_values(before, after) == rows.written(
        before, after, rows.run_values(after)
    )
    assert set(rows.changed_run_values(before, after)) == {
        name for name, value in changes.items() if value is not getattr(before, name)
    }
