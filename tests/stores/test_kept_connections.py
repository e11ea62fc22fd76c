"""The connections a SQLite store keeps between transactions: each reading thread's, and
the writer's between batches. Keeping them must change nothing a caller can see: a read
sees every write committed before it began, a read inside a read works, a connection
whose use failed is not used again, and closing the store closes them all.

Real `SqlStore`s on SQLite files, a second store on the same file as the other writer.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
import sqlalchemy as sa
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from keep_sdk.errors import NotFound
from keep_sdk.stores import Publication, SqlStore
from keep_sdk.stores.sql._engine import HELD_READERS


@pytest.fixture
def store(tmp_path: Path) -> Iterator[SqlStore]:
    store = SqlStore(f"sqlite:///{tmp_path / 'keep.db'}")
    store.deploy("wf", "source", {}, handlers=[])
    yield store
    store.close()


def checkouts(store: SqlStore) -> list[int]:
    """The ids of the DBAPI connections checked out of `store`'s pool from now on."""
    taken: list[int] = []
    sa.event.listen(store.engine, "checkout", lambda dbapi, *_: taken.append(id(dbapi)))
    return taken


def publish(store: SqlStore, n: int) -> None:
    store.publish("wf", Publication(topic="t", message_id=f"m{n}", title=f"T{n}"))


def test_a_thread_reads_on_one_kept_connection(store: SqlStore) -> None:
    store.pending_events("wf", "t", limit=5)
    taken = checkouts(store)
    for _ in range(20):
        store.pending_events("wf", "t", limit=5)
        store.count_by_status()
    assert taken == []


def test_the_writer_keeps_its_connection_between_batches(store: SqlStore) -> None:
    publish(store, 0)
    taken = checkouts(store)
    for n in range(1, 21):
        publish(store, n)
    assert taken == []
    assert store.group_commits[0] >= 21


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    steps=st.lists(
        st.sampled_from(["mine", "theirs", "read", "block", "nested", "fail"]), max_size=25
    )
)
def test_a_kept_reader_sees_every_write_committed_before_its_read(
    tmp_path_factory: pytest.TempPathFactory, steps: list[str]
) -> None:
    """Writes by this store and by another store on the same file (another process's
    connections), interleaved with reads, `reading` blocks, reads inside a read
    transaction and reads that raise: every read sees exactly the writes committed before
    it began, and a read transaction keeps its snapshot while a read inside it does not."""
    path = tmp_path_factory.mktemp("kept") / "keep.db"
    store = SqlStore(f"sqlite:///{path}")
    other = SqlStore(f"sqlite:///{path}")
    try:
        store.deploy("wf", "source", {}, handlers=[])
        written = 0

        def seen() -> int:
            return len(store.pending_events("wf", "t", limit=1000))

        for step in steps:
            if step in ("mine", "theirs"):
                publish(store if step == "mine" else other, written)
                written += 1
            elif step == "read":
                assert seen() == written
            elif step == "block":
                with store.reading():
                    assert seen() == written
                    publish(other, written)
                    written += 1
                    assert seen() == written - 1
                assert seen() == written
            elif step == "nested":
                with store.transaction(write=False) as outer:
                    snapshot = len(outer.pending_events("wf", "t", 1000))
                    assert snapshot == written
                    publish(other, written)
                    written += 1
                    assert seen() == written
                    assert len(outer.pending_events("wf", "t", 1000)) == snapshot
            else:
                with pytest.raises(NotFound):
                    store.get_run("no-such-run")
            assert seen() == written
    finally:
        store.close()
        other.close()


def test_a_connection_whose_read_raised_is_not_used_again(store: SqlStore) -> None:
    store.pending_events("wf", "t", limit=5)
    taken = checkouts(store)
    with store.transaction(write=False) as tx:
        kept = tx.conn

    def failing_read() -> None:
        with store.transaction(write=False) as tx:
            assert tx.conn is kept
            raise RuntimeError("a read that failed")

    with pytest.raises(RuntimeError, match="a read that failed"):
        failing_read()
    assert kept.closed
    store.pending_events("wf", "t", limit=5)
    with store.transaction(write=False) as tx:
        assert tx.conn is not kept
        assert not tx.conn.closed
    assert len(taken) == 1


def test_threads_beyond_the_limit_read_on_connections_from_the_pool(store: SqlStore) -> None:
    """More reading threads than keep a connection, all reading at once: each reads what
    was written, and no more than `HELD_READERS` connections stay out of the pool."""
    publish(store, 0)
    threads = HELD_READERS + 4
    barrier = threading.Barrier(threads)
    counts: list[int] = []
    errors: list[BaseException] = []

    def read() -> None:
        try:
            barrier.wait(10)
            for _ in range(5):
                counts.append(len(store.pending_events("wf", "t", limit=5)))
        except BaseException as exc:
            errors.append(exc)

    workers = [threading.Thread(target=read) for _ in range(threads)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(30)
    assert errors == []
    assert counts == [1] * threads * 5
    pool = store.engine.pool
    assert isinstance(pool, sa.pool.QueuePool)
    assert pool.checkedout() <= HELD_READERS + 1


def test_closing_the_store_returns_every_kept_connection(tmp_path: Path) -> None:
    store = SqlStore(f"sqlite:///{tmp_path / 'keep.db'}")
    store.deploy("wf", "source", {}, handlers=[])
    kept: list[sa.Connection] = []
    together = threading.Barrier(3)

    def read() -> None:
        with store.transaction(write=False) as tx:
            kept.append(tx.conn)

    def read_together() -> None:
        read()
        together.wait(10)

    threads = [threading.Thread(target=read_together) for _ in range(3)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(10)
    with store.transaction() as tx:
        kept.append(tx.conn)
    read()
    assert len({id(conn) for conn in kept}) == 5
    assert not any(conn.closed for conn in kept)
    pool = store.engine.pool
    assert isinstance(pool, sa.pool.QueuePool)
    assert pool.checkedout() == 5
    store.close()
    assert all(conn.closed for conn in kept)
    assert pool.checkedout() == 0
