"""What `SqlStore`'s constructor promises beyond the protocol: the fault hook it is given
is the one its commit points call, a store opened normally accepted no rollback, a SQLite
store watches the file it opened, and a PostgreSQL store leaves no file behind (the commit
mark and the file check are SQLite's alone)."""

from __future__ import annotations

import datetime as dt
import os
import shutil
from pathlib import Path

import pytest
from sqlalchemy.exc import IntegrityError

from keep_sdk.conformance.postgres import PostgresServer
from keep_sdk.errors import (
    ActiveRunExists,
    MutationConflict,
    NotFound,
    StoreConflict,
    StoreUnavailable,
)
from keep_sdk.model import Event, HandlerKind, PrepareResult, Reservation, RunPhase
from keep_sdk.stores import FaultPoint, HandlerSpec, MemoryStore, Publication, SqlStore
from keep_sdk.stores.sql.store import _translate

HANDLERS = [HandlerSpec(name="c", kind=HandlerKind.CONSUMER, subscribe=["in"])]


def _commit(store: SqlStore) -> None:
    store.deploy("wf", "src", {}, handlers=HANDLERS)
    store.publish("wf", Publication(topic="in", message_id="a", title="a"))


def test_the_fault_hook_given_when_opening_is_the_one_commit_points_call(tmp_path: Path) -> None:
    reached: list[FaultPoint] = []
    store = SqlStore(f"sqlite:///{tmp_path}/k.db", fault_hook=reached.append)
    try:
        _commit(store)
    finally:
        store.close()
    assert reached == [FaultPoint.DEPLOY_VERSION, FaultPoint.DEPLOY_HANDLERS]


def test_a_store_opened_normally_accepted_no_rollback(tmp_path: Path) -> None:
    store = SqlStore(f"sqlite:///{tmp_path}/k.db")
    store.close()
    assert store.accepted is None


def test_a_sqlite_store_refuses_to_write_once_its_file_was_replaced(tmp_path: Path) -> None:
    path = tmp_path / "k.db"
    store = SqlStore(f"sqlite:///{path}")
    try:
        _commit(store)
        copy = tmp_path / "copy.db"
        shutil.copyfile(path, copy)
        os.replace(copy, path)
        with pytest.raises(StoreUnavailable) as refused:
            store.publish("wf", Publication(topic="in", message_id="b", title="b"))
    finally:
        store.close()
    assert str(path) in str(refused.value)


@pytest.mark.postgres
def test_a_postgresql_store_ignores_a_sqlite_mark_of_the_same_name_and_leaves_no_file(
    postgres_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A person who moved from the SQLite store ``./keep_x`` to the PostgreSQL database
    ``keep_x`` and runs keep from the same folder: the old store's commit mark, ahead of
    anything the new database holds, is not the new store's."""
    monkeypatch.chdir(tmp_path)
    database = postgres_url.rpartition("/")[2]
    mark = tmp_path / f"{database}-mark"
    mark.write_text(f"{99:020d}\n")
    store = SqlStore(postgres_url)
    try:
        _intent(store, "wiring")
    finally:
        store.close()
    SqlStore(postgres_url).close()
    assert sorted(os.listdir(tmp_path)) == [mark.name]
    assert mark.read_text() == f"{99:020d}\n"


PAGES = {
    "event": lambda store: store.page_events("wf", before="gone", limit=10),
    "run": lambda store: store.page_runs(before="gone", limit=10),
    "ledger entry": lambda store: store.page_ledger(before="gone", limit=10),
}


@pytest.mark.parametrize("what", sorted(PAGES))
def test_a_page_from_a_cursor_that_names_nothing_says_what_was_not_found(
    tmp_path: Path, what: str
) -> None:
    store = SqlStore(f"sqlite:///{tmp_path}/k.db")
    try:
        with pytest.raises(NotFound) as refused:
            PAGES[what](store)
    finally:
        store.close()
    assert str(refused.value) == f"no {what} 'gone' to page from; start again from the first page"


def _intent(store: SqlStore, workflow: str) -> str:
    store.deploy(workflow, "src", {}, handlers=HANDLERS)
    store.publish(workflow, Publication(topic="in", message_id="a", title="a"))
    run = store.begin_run(workflow, "c", HandlerKind.CONSUMER)
    store.save_prepare_result(
        run.id, PrepareResult(reservations=[Reservation(topic="in", ids=["a"])])
    )
    store.advance_phase(run.id, RunPhase.MUTATING)
    entry = store.record_mutation_intent(
        run.id, connector="sheets", operation="appendRow", params={}, idempotency_key=run.id
    )
    return entry.id


@pytest.mark.postgres
def test_the_ledger_is_listed_in_creation_order_after_its_first_entry_changed(
    postgres_server: PostgresServer,
) -> None:
    """PostgreSQL writes an updated row anew at the end of its table, so a read without
    its order would list a changed entry last."""
    store = SqlStore(postgres_server.create_database("keep_ledger_order"))
    try:
        ids = [_intent(store, f"wf{i}") for i in range(3)]
        store.record_mutation_applied(ids[0], {"row": 1})
        listed = [entry.id for entry in store.list_ledger()]
    finally:
        store.close()
    assert listed == ids


CONFLICTS = [
    (
        'duplicate key value violates unique constraint "uq_runs_one_active"',
        ActiveRunExists,
        "another worker began or resumed a run in this workflow at the same moment; "
        "only one run may be active, so this one was not",
    ),
    (
        "UNIQUE constraint failed: keep_ledger.run_id",
        MutationConflict,
        "the run already recorded its one mutation (another worker)",
    ),
    (
        "UNIQUE constraint failed: keep_events.id",
        StoreConflict,
        "a concurrent change conflicted with this one: UNIQUE constraint failed: keep_events.id",
    ),
]


@pytest.mark.parametrize(("driver", "kind", "message"), CONFLICTS)
def test_a_constraint_another_worker_won_is_told_as_what_happened(
    driver: str, kind: type[StoreConflict], message: str
) -> None:
    """The race a second worker loses (on PostgreSQL, where two transactions can both get
    to the insert) reaches the loser as a conflict that says what the winner did."""
    translated = _translate(IntegrityError("INSERT", {}, Exception(driver)))
    assert type(translated) is kind
    assert str(translated) == message


@pytest.mark.parametrize("kind", ["memory", "sqlite"])
def test_a_transaction_reserves_events_its_run_already_holds_and_no_one_elses(
    tmp_path: Path, kind: str
) -> None:
    """`Transaction.reserve_events` counts an event the same run reserved already (a commit
    point that reserves again must not see it as taken), never one another run holds, and
    only the topic's: another topic's event with the same messageId stays pending."""
    store: MemoryStore | SqlStore = (
        MemoryStore() if kind == "memory" else SqlStore(f"sqlite:///{tmp_path}/k.db")
    )
    try:
        store.deploy("wf", "src", {}, handlers=HANDLERS)
        for topic, mid in (("in", "a"), ("in", "b"), ("other", "a")):
            store.publish("wf", Publication(topic=topic, message_id=mid, title=mid))
        run = store.begin_run("wf", "c", HandlerKind.CONSUMER).id
        now = dt.datetime.now(dt.UTC)
        with store.transaction() as tx:
            first = tx.reserve_events(run, "wf", "in", ["a"], now)
            again = tx.reserve_events(run, "wf", "in", ["a", "b"], now)
            other = tx.reserve_events("run_other", "wf", "in", ["a", "b"], now)
        held = {
            (event.topic, event.message_id): (event.status.value, event.reserved_by)
            for topic, ids in (("in", ["a", "b"]), ("other", ["a"]))
            for event in store.events_by_ids("wf", topic, ids)
        }
    finally:
        store.close()
    assert (first, again, other) == (1, 2, 0)
    assert held == {
        ("in", "a"): ("reserved", run),
        ("in", "b"): ("reserved", run),
        ("other", "a"): ("pending", None),
    }


def test_a_bulk_load_larger_than_a_chunk_loads_every_event_once(tmp_path: Path) -> None:
    """`bulk_load_events` sends its rows in chunks of 10,000: 20,003 events cross two chunk
    boundaries and must all arrive, each once, in order."""
    store = SqlStore(f"sqlite:///{tmp_path}/k.db")
    try:
        store.deploy("wf", "src", {}, handlers=HANDLERS)
        now = dt.datetime(2026, 1, 1, tzinfo=dt.UTC)
        store.bulk_load_events(
            "wf",
            [
                Event(
                    id=f"e{i}",
                    workflow="wf",
                    topic="in",
                    message_id=f"m{i}",
                    title="t",
                    created_at=now,
                    updated_at=now,
                )
                for i in range(20_003)
            ],
        )
        loaded = store.pending_events("wf", "in", limit=30_000)
    finally:
        store.close()
    assert [e.message_id for e in loaded] == [f"m{i}" for i in range(20_003)]
