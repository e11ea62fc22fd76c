"""A SQLite store that went back in time is refused when opened (issue 12, item 7).

The database is rolled back the way it happens to people: the main file is taken as it
is on disk while its ``-wal`` holds later commits (what a deleted WAL leaves), or an
older copy is put in its place.
"""

from __future__ import annotations

import fcntl
import multiprocessing
import os
import shutil
import sqlite3
import time
import uuid
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from keep_sdk.conformance.stores._support import CONSUMER, STANDARD_HANDLERS
from keep_sdk.errors import ConfigurationError, StoreRolledBack, StoreUnavailable
from keep_sdk.model import HandlerKind, LedgerStatus, PrepareResult, Reservation, RunStatus
from keep_sdk.stores import Publication, SqlStore
from keep_sdk.stores.sql import accept_rollback
from keep_sdk.stores.sql._mark import CommitMark

WF = "w"
STEPS = ("run", "intent only", "publish", "durable-free commit")


def _url(path: Path) -> str:
    return f"sqlite:///{path}?synchronous=NORMAL"


def _open(path: Path) -> SqlStore:
    store = SqlStore(_url(path))
    if WF not in {w.name for w in store.list_workflows()}:
        store.deploy(WF, "x", {"topics": ["in"]}, handlers=STANDARD_HANDLERS)
    return store


def _step(store: SqlStore, kind: str, n: int) -> None:
    """One piece of work; "run" and "intent only" write a mutation intent."""
    mid = f"m{n}"
    store.publish(WF, Publication(topic="in", message_id=mid, title=mid))
    if kind == "publish":
        return
    run = store.begin_run(WF, CONSUMER, HandlerKind.CONSUMER)
    store.save_prepare_result(
        run.id, PrepareResult(reservations=[Reservation(topic="in", ids=[mid])], data={})
    )
    if kind == "durable-free commit":
        store.commit_consumer_run(run.id)
        return
    entry = store.record_mutation_intent(
        run.id, connector="sheets", operation="appendRow", params={}, idempotency_key=run.id
    )
    if kind == "intent only":
        store.set_run_status(run.id, RunStatus.CRASHED)
        return
    store.record_mutation_applied(entry.id, {"row": n})
    store.commit_consumer_run(run.id)


def _checkpoint(path: Path) -> None:
    with sqlite3.connect(path) as conn:
        busy, _, _ = conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()
    assert busy == 0


def _without_wal(path: Path, into: Path) -> Path:
    """The database as a deleted WAL leaves it: the main file and the mark, no ``-wal``."""
    into.mkdir()
    shutil.copy(path, into / path.name)
    mark = Path(f"{path}-mark")
    if mark.exists():
        shutil.copy(mark, into / mark.name)
    return into / path.name


@settings(
    max_examples=40,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(
    steps=st.lists(st.sampled_from(STEPS), min_size=1, max_size=6),
    data=st.data(),
)
def test_a_database_is_refused_exactly_when_it_lost_an_intent(
    tmp_path_factory: pytest.TempPathFactory, steps: list[str], data: st.DataObject
) -> None:
    folder = tmp_path_factory.mktemp("rollback")
    db = folder / "keep.db"
    store = _open(db)
    lands = data.draw(st.integers(0, len(steps)), label="the rollback lands after step")
    try:
        for n, kind in enumerate(steps):
            if n == lands:
                _checkpoint(db)
            _step(store, kind, n)
        if lands == len(steps):
            _checkpoint(db)
        lost = _without_wal(db, folder / "lost")
    finally:
        store.close()
    intents_lost = any(kind in ("run", "intent only") for kind in steps[lands:])
    if not intents_lost:
        _open(lost).close()
        return
    with pytest.raises(StoreRolledBack) as refused:
        SqlStore(_url(lost))
    kept = sum(kind in ("run", "intent only") for kind in steps[:lands])
    assert (refused.value.found, refused.value.mark) == (
        kept,
        sum(kind in ("run", "intent only") for kind in steps),
    )
    assert refused.value.database == str(lost)
    store_url = _url(lost)
    assert str(refused.value) == (
        f"the store {store_url} went back in time: {lost} holds mutation intents "
        f"up to #{kept}, but #{refused.value.mark} was committed to it (recorded in "
        f"{lost}-mark). Committed runs were lost, for example because the keep.db-wal file "
        "was deleted after a crash or an older copy of the database was put in its place; "
        "running on would repeat mutations that were already made, so nothing was run. Put "
        "the missing file back if you still have it (stop every keep process first, then "
        f"restore {lost}-wal beside the database). If you restored this database on purpose, "
        f"accept it as it is with `keep accept-rollback --store {store_url}`: the lost runs' "
        "events will run again."
    )
    accepted = accept_rollback(_url(lost))
    assert (accepted.mark_before, accepted.mark_after) == (refused.value.mark, kept)
    again = _open(lost)
    try:
        assert len(again.list_ledger()) == kept
        _step(again, "run", 99)
    finally:
        again.close()
    _open(lost).close()


def test_a_refused_open_changes_nothing_and_runs_nothing(tmp_path: Path) -> None:
    db = tmp_path / "keep.db"
    store = _open(db)
    _step(store, "run", 0)
    _checkpoint(db)
    for n in range(1, 4):
        _step(store, "run", n)
    lost = _without_wal(db, tmp_path / "lost")
    store.close()
    before = lost.read_bytes()
    for _ in range(2):
        with pytest.raises(StoreRolledBack, match=r"holds mutation intents up to #1, but #4"):
            SqlStore(_url(lost))
    with sqlite3.connect(lost) as conn:
        assert conn.execute("SELECT count(*) FROM keep_ledger").fetchone() == (1,)
    assert lost.read_bytes() == before


def test_a_fresh_store_and_a_copy_without_its_mark_open(tmp_path: Path) -> None:
    db = tmp_path / "keep.db"
    store = _open(db)
    assert not Path(f"{db}-mark").exists()
    _step(store, "run", 0)
    store.close()
    assert Path(f"{db}-mark").read_text() == f"{1:020d}\n"
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    shutil.copy(db, elsewhere / "keep.db")
    copy = _open(elsewhere / "keep.db")
    try:
        _step(copy, "run", 1)
        assert [e.status for e in copy.list_ledger()] == [LedgerStatus.APPLIED] * 2
    finally:
        copy.close()


def test_a_deleted_database_beside_its_mark_is_refused_until_accepted(tmp_path: Path) -> None:
    db = tmp_path / "keep.db"
    store = _open(db)
    _step(store, "run", 0)
    store.close()
    db.unlink()
    with pytest.raises(StoreRolledBack, match="up to #0, but #1"):
        SqlStore(_url(db))
    accepted = accept_rollback(_url(db))
    assert (accepted.mark_before, accepted.mark_after, accepted.forgotten) == (1, 0, 1)
    _open(db).close()


def test_several_stores_on_one_file_keep_the_newest_intent(tmp_path: Path) -> None:
    db = tmp_path / "keep.db"
    first, second = _open(db), _open(db)
    try:
        for n in range(6):
            _step((first, second)[n % 2], "run", n)
        assert Path(f"{db}-mark").read_text() == f"{6:020d}\n"
    finally:
        first.close()
        second.close()


def test_a_damaged_mark_is_refused_with_what_to_do(tmp_path: Path) -> None:
    db = tmp_path / "keep.db"
    _open(db).close()
    held = "garbage " * 8
    Path(f"{db}-mark").write_text(held + "\n")
    with pytest.raises(StoreRolledBack) as refused:
        SqlStore(_url(db))
    shown = held.strip().encode()[:40]
    assert str(refused.value) == (
        f"the commit mark {db}-mark is damaged (it holds {shown!r}, not a number), so keep "
        "cannot tell whether the database lost committed runs. If the database is as it "
        "should be, accept it with `keep accept-rollback`."
    )
    assert refused.value.database == str(db)


@pytest.mark.parametrize("held", ["garbage\n", "garbage " * 8 + "\n", "1" * 30 + "x\n"])
def test_accepting_a_damaged_mark_opens_the_store_whatever_the_mark_held(
    tmp_path: Path, held: str
) -> None:
    """Accepting writes the number over the start of the mark: what a longer damaged mark
    held past it must be cut off, or the store stays refused."""
    db = tmp_path / "keep.db"
    _open(db).close()
    Path(f"{db}-mark").write_text(held)
    assert accept_rollback(_url(db)).mark_before is None
    assert Path(f"{db}-mark").read_text() == f"{0:020d}\n"
    _open(db).close()


def test_a_mark_that_cannot_be_written_stops_before_the_call(tmp_path: Path) -> None:
    db = tmp_path / "keep.db"
    store = _open(db)
    Path(f"{db}-mark").mkdir()
    try:
        with pytest.raises(StoreUnavailable) as refused:
            _step(store, "run", 0)
    finally:
        store.close()
    assert str(refused.value) == (
        f"the commit mark {db}-mark could not be written (Is a directory); make the "
        "database's folder writable. The mutation was recorded but not called."
    )
    assert refused.value.reason == f"[Errno 21] Is a directory: '{db}-mark'"
    assert isinstance(refused.value.__cause__, IsADirectoryError)


def test_the_mark_is_a_file_its_owner_may_write_and_others_read(tmp_path: Path) -> None:
    db = tmp_path / "keep.db"
    store = _open(db)
    previous = os.umask(0)
    try:
        _step(store, "run", 0)
    finally:
        os.umask(previous)
        store.close()
    assert Path(f"{db}-mark").stat().st_mode & 0o777 == 0o644


def test_accepting_a_store_that_is_not_sqlite_is_a_configuration_error() -> None:
    with pytest.raises(ConfigurationError, match="not a SQLite store"):
        accept_rollback("postgresql://keep@127.0.0.1:1/keep")


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    advances=st.lists(
        st.tuples(st.integers(0, 2), st.integers(0, 10**15), st.booleans()), min_size=1, max_size=25
    )
)
def test_the_mark_only_moves_forward_whichever_store_advances_it(
    tmp_path: Path, advances: list[tuple[int, int, bool]]
) -> None:
    """Stores commit in one order and advance the mark in another: whatever order the
    advances arrive in, and from whichever of several stores on the file (closed and used
    again or not), the mark is the newest intent any of them recorded."""
    db = tmp_path / f"{uuid.uuid4().hex}.db"
    marks = [CommitMark(db) for _ in range(3)]
    try:
        highest = 0
        for which, newest, closed_first in advances:
            if closed_first:
                marks[which].close()
            marks[which].advance(newest)
            highest = max(highest, newest)
            assert marks[(which + 1) % 3].read() == highest
    finally:
        for mark in marks:
            mark.close()


def _read_shared(path: Path) -> int:
    """The mark as it stands, read under a shared lock (no write is seen half done)."""
    fd = os.open(path, os.O_RDONLY)
    try:
        fcntl.flock(fd, fcntl.LOCK_SH)
        return int(os.pread(fd, 64, 0).strip() or 0)
    finally:
        os.close(fd)


def _advance_from(db: Path, k: int, stores: int, start_at: float) -> None:
    mark = CommitMark(db)
    time.sleep(max(0.0, start_at - time.time()))
    for i in range(_RACED):
        mark.advance(stores * i + k)
        if _read_shared(mark.path) < stores * i + k:
            os._exit(3)
    mark.close()


_RACED = 3_000


def test_racing_processes_leave_the_mark_at_the_newest_intent(tmp_path: Path) -> None:
    """Four processes on one file advance the mark at once, each interleaving its intents
    with the others' and reading the mark back after each advance: it never falls below
    what the reader itself recorded (a read-then-write not excluded across processes lets
    a late, lower advance overwrite a higher one), and it ends at the newest of all."""
    db = tmp_path / "keep.db"
    stores = 4
    start_at = time.time() + 0.5
    context = multiprocessing.get_context("fork")
    children = [
        context.Process(target=_advance_from, args=(db, k, stores, start_at)) for k in range(stores)
    ]
    for child in children:
        child.start()
    for child in children:
        child.join(60)
    assert [child.exitcode for child in children] == [0] * stores
    assert CommitMark(db).read() == stores * (_RACED - 1) + stores - 1
