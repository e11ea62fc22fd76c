"""Group commit on SQLite: the writes of many threads share commits, and none is told it
committed unless it did.

`GroupCommit` on a real SQLite file (its own table, so each case can force the batch it
needs), and `SqlStore` under threads and a real SIGKILL.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
import sqlalchemy as sa
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sqlalchemy.exc import IntegrityError

from keep_sdk.errors import StoreUnavailable
from keep_sdk.stores import Publication, SqlStore
from keep_sdk.stores.sql._engine import WRITE, create_store_engine
from keep_sdk.stores.sql._group import GroupCommit, GroupCommitTimeout

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def engine(tmp_path: Path) -> Iterator[sa.Engine]:
    engine = create_store_engine(f"sqlite:///{tmp_path / 'g.db'}")
    with engine.begin() as conn:
        conn.exec_driver_sql("CREATE TABLE parent (id INTEGER PRIMARY KEY)")
        conn.exec_driver_sql(
            "CREATE TABLE item (id TEXT PRIMARY KEY, parent INTEGER REFERENCES parent(id))"
        )
        conn.exec_driver_sql("INSERT INTO parent VALUES (1)")
    yield engine
    engine.dispose()


def group(engine: sa.Engine, timeout_s: float = 5.0) -> GroupCommit:
    def connect() -> sa.Connection:
        conn = engine.connect()
        conn.execution_options(**{WRITE: True})
        return conn

    return GroupCommit(connect, timeout_s=timeout_s)


def items(engine: sa.Engine) -> set[str]:
    with engine.connect() as conn:
        return {r[0] for r in conn.exec_driver_sql("SELECT id FROM item")}


def insert(conn: sa.Connection, item: str, parent: int = 1) -> None:
    conn.exec_driver_sql("INSERT INTO item VALUES (?, ?)", (item, parent))


Body = Callable[[sa.Connection], None]


def in_thread(target: Callable[[], None]) -> tuple[threading.Thread, list[BaseException | None]]:
    outcome: list[BaseException | None] = []

    def run() -> None:
        try:
            target()
        except BaseException as exc:
            outcome.append(exc)
        else:
            outcome.append(None)

    thread = threading.Thread(target=run)
    thread.start()
    return thread, outcome


def in_one_batch(
    commit: GroupCommit, first: Body, second: Body
) -> tuple[BaseException | None, BaseException | None]:
    """`first` and `second` as two members of one batch: the first holds its turn until
    the second queued behind it. What each raised (None: it returned)."""
    opened = threading.Event()

    def first_member() -> None:
        with commit.member() as conn:
            first(conn)
            opened.set()
            deadline = time.monotonic() + 5
            while commit._queued < 1:
                assert time.monotonic() < deadline, "the second write never queued"
                time.sleep(0.001)

    def second_member() -> None:
        with commit.member() as conn:
            second(conn)

    one, first_outcome = in_thread(first_member)
    opened.wait(5)
    two, second_outcome = in_thread(second_member)
    one.join(10)
    two.join(10)
    return first_outcome[0], second_outcome[0]


def test_a_write_that_fails_in_a_batch_is_undone_alone(engine: sa.Engine) -> None:
    commit = group(engine)

    def duplicate(conn: sa.Connection) -> None:
        insert(conn, "b")
        insert(conn, "a")

    first, second = in_one_batch(commit, lambda conn: insert(conn, "a"), duplicate)
    commit.close()
    assert first is None
    assert isinstance(second, IntegrityError)
    assert items(engine) == {"a"}
    assert (commit.commits, commit.members) == (1, 1)


def test_a_write_queued_behind_another_shares_its_commit(engine: sa.Engine) -> None:
    commit = group(engine)
    outcomes = in_one_batch(commit, lambda conn: insert(conn, "a"), lambda conn: insert(conn, "b"))
    commit.close()
    assert outcomes == (None, None)
    assert items(engine) == {"a", "b"}
    assert (commit.commits, commit.members) == (1, 2)


def test_a_batch_whose_commit_fails_tells_every_member_and_keeps_nothing(
    engine: sa.Engine,
) -> None:
    """A deferred foreign key fails the COMMIT itself: the member that wrote a good row
    is told too, and its row is not there."""
    commit = group(engine)

    def orphan(conn: sa.Connection) -> None:
        conn.exec_driver_sql("PRAGMA defer_foreign_keys = ON")
        insert(conn, "orphan", parent=99)

    first, second = in_one_batch(commit, lambda conn: insert(conn, "good"), orphan)
    assert isinstance(first, IntegrityError), first
    assert isinstance(second, IntegrityError), second
    assert items(engine) == set()
    assert commit.commits == 0
    with commit.member() as conn:
        insert(conn, "after")
    assert items(engine) == {"after"}
    commit.close()


def test_a_write_that_waits_longer_than_the_busy_timeout_gives_up(engine: sa.Engine) -> None:
    commit = group(engine, timeout_s=0.2)
    holding = threading.Event()
    release = threading.Event()

    def holder() -> None:
        with commit.member() as conn:
            insert(conn, "held")
            holding.set()
            release.wait(5)

    t1, out1 = in_thread(holder)
    holding.wait(5)
    started = time.monotonic()
    late = commit.member()
    with pytest.raises(GroupCommitTimeout, match=r"held the database for 0\.2 s"), late as conn:
        insert(conn, "late")
    assert time.monotonic() - started < 2
    release.set()
    t1.join(10)
    assert out1 == [None]
    assert items(engine) == {"held"}
    commit.close()


@settings(
    max_examples=25,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
    derandomize=True,
)
@given(
    plans=st.lists(
        st.lists(st.sampled_from(["ok", "dup", "raise"]), min_size=1, max_size=6),
        min_size=2,
        max_size=6,
    )
)
def test_any_mix_of_threads_keeps_exactly_what_each_was_told_it_wrote(
    tmp_path_factory: pytest.TempPathFactory, plans: list[list[str]]
) -> None:
    """Each thread writes a sequence of transactions: some commit, some hit a duplicate
    key, some raise in the middle. Afterwards the table holds exactly the rows of the
    transactions whose block returned."""
    engine = create_store_engine(f"sqlite:///{tmp_path_factory.mktemp('g') / 'g.db'}")
    with engine.begin() as conn:
        conn.exec_driver_sql("CREATE TABLE item (id TEXT PRIMARY KEY, parent INTEGER)")
    commit = group(engine)
    told: list[str] = []
    lock = threading.Lock()

    def worker(t: int, plan: list[str]) -> None:
        for i, kind in enumerate(plan):
            row = f"{t}-{i}"
            try:
                with commit.member() as conn:
                    insert(conn, row)
                    if kind == "dup":
                        insert(conn, row)
                    elif kind == "raise":
                        raise RuntimeError("the caller gave up")
            except (IntegrityError, RuntimeError):
                continue
            with lock:
                told.append(row)

    threads = [threading.Thread(target=worker, args=(t, p)) for t, p in enumerate(plans)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    commit.close()
    assert items(engine) == set(told)
    assert commit.members == len(told)
    engine.dispose()


def test_a_store_commits_concurrent_writes_together(tmp_path: Path) -> None:
    store = SqlStore(f"sqlite:///{tmp_path / 'k.db'}")
    store.deploy("wf", "src", {})
    before = store.group_commits
    gate = threading.Barrier(8)

    def publish(t: int) -> None:
        gate.wait(5)
        for i in range(25):
            store.publish("wf", Publication(topic="in", message_id=f"{t}-{i}", title="t"))

    threads = [threading.Thread(target=publish, args=(t,)) for t in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    batches, members = (a - b for a, b in zip(store.group_commits, before, strict=True))
    pending = store.pending_events("wf", "in", limit=500)
    store.close()
    assert sorted(e.message_id for e in pending) == sorted(
        f"{t}-{i}" for t in range(8) for i in range(25)
    )
    assert members == 200
    assert batches < members, "eight threads publishing never shared a commit"


def test_a_store_waiting_for_its_own_writer_longer_than_the_busy_timeout_is_unavailable(
    tmp_path: Path,
) -> None:
    store = SqlStore(f"sqlite:///{tmp_path / 'k.db'}?busy_timeout=200")
    store.deploy("wf", "src", {})
    holding = threading.Event()
    release = threading.Event()

    def hold() -> None:
        with store.transaction() as tx:
            tx.conn.exec_driver_sql("SELECT 1")  # type: ignore[attr-defined]
            holding.set()
            release.wait(5)

    thread = threading.Thread(target=hold)
    thread.start()
    holding.wait(5)
    try:
        with pytest.raises(StoreUnavailable) as refused:
            store.publish("wf", Publication(topic="in", message_id="m", title="t"))
    finally:
        release.set()
        thread.join(10)
    assert refused.value.reason == "database is locked"
    assert "held the database for 0.2 s" in str(refused.value)
    store.close()


CHILD = textwrap.dedent(
    """
    import sys, threading
    from keep_sdk.stores import Publication, SqlStore

    store = SqlStore(sys.argv[1])
    store.deploy("wf", "src", {})
    print("ready", flush=True)

    lock = threading.Lock()

    def publish(t):
        for i in range(100000):
            mid = f"{t}-{i}"
            store.publish("wf", Publication(topic="in", message_id=mid, title="t"))
            with lock:
                sys.stdout.write(mid + "\\n")
                sys.stdout.flush()

    for t in range(6):
        threading.Thread(target=publish, args=(t,), daemon=True).start()
    threading.Event().wait()
    """
)


@pytest.mark.parametrize("after", [50, 400])
def test_every_write_acknowledged_before_a_sigkill_is_in_the_database(
    tmp_path: Path, after: int
) -> None:
    """Six threads publish; each prints an id once its publish returned. The process is
    SIGKILLed mid-stream: every printed id is in the database when it is opened again."""
    url = f"sqlite:///{tmp_path / 'k.db'}"
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    child = subprocess.Popen(
        [sys.executable, "-c", CHILD, url], stdout=subprocess.PIPE, text=True, env=env
    )
    assert child.stdout is not None
    assert child.stdout.readline().strip() == "ready"
    told: list[str] = []
    while len(told) < after:
        line = child.stdout.readline()
        assert line, "the child stopped publishing"
        told.append(line.strip())
    child.send_signal(signal.SIGKILL)
    rest, _ = child.communicate(timeout=30)
    told.extend(x for x in rest.split("\n") if x.strip() and "-" in x)
    store = SqlStore(url)
    try:
        found = {e.message_id for e in store.pending_events("wf", "in", limit=1_000_000)}
    finally:
        store.close()
    missing = [m for m in told if m not in found]
    assert not missing, f"{len(missing)} acknowledged publishes were lost: {missing[:5]}"


def test_a_committed_batch_leaves_its_connection_to_the_next_and_a_failed_one_closes_it(
    engine: sa.Engine,
) -> None:
    opened: list[sa.Connection] = []

    def connect() -> sa.Connection:
        conn = engine.connect()
        conn.execution_options(**{WRITE: True})
        opened.append(conn)
        return conn

    commit = GroupCommit(connect, timeout_s=5.0)
    for n in range(5):
        with commit.member() as conn:
            insert(conn, f"ok{n}")
    assert len(opened) == 1
    with pytest.raises(IntegrityError), commit.member() as conn:
        insert(conn, "ok0")
    assert opened[0].closed
    with commit.member() as conn:
        insert(conn, "after")
    assert len(opened) == 2
    assert items(engine) == {"ok0", "ok1", "ok2", "ok3", "ok4", "after"}
    commit.close()
    assert opened[1].closed
