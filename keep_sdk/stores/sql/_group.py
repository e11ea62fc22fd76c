"""`GroupCommit`: the write transactions of many threads committed together on SQLite.

SQLite takes one writer at a time and a commit costs an fsync. A worker running runs of
several workflows at once would pay one fsync per checkpoint per run, each waiting for the
write lock. Here the write transactions of a store take turns; one that finds a batch open
(others wrote and are waiting for the commit) joins its transaction inside a savepoint, and
whoever finishes with nobody queued behind it commits the batch, one fsync for all. A
member learns its outcome only from that commit: it returns when the batch is durable and
raises when the batch failed, so nothing a caller was told is written can be lost, and a
member that fails is rolled back to its savepoint alone.
"""

from __future__ import annotations

import copy
import sqlite3
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress

from sqlalchemy import Connection
from sqlalchemy.engine import NestedTransaction, RootTransaction

from keep_sdk.errors import StoreUnavailable

__all__ = ["GroupCommit", "GroupCommitTimeout"]

_STRANDED_S = 0.05
"""How often a member waiting for its batch's commit checks that someone will commit it."""


class GroupCommitTimeout(Exception):
    """Another write of this process held the connection longer than the busy timeout."""


class _Batch:
    """One SQLite transaction on a connection of its own, shared by the members that
    joined it."""

    def __init__(self, conn: Connection, root: RootTransaction) -> None:
        self.conn = conn
        self.root = root
        self.members = 0
        self.done = threading.Event()
        self.error: BaseException | None = None

    def outcome(self) -> None:
        """Wait for the commit; raise (a copy of) what failed it."""
        self.done.wait()
        if self.error is not None:
            raise _copied(self.error) from self.error


class GroupCommit:
    """Write transactions committed in groups, each group on a connection from `connect`.

    `member()` yields a connection inside a transaction of the caller's own (the first
    of a batch) or a savepoint of a batch others opened. Waiting for the connection is
    bounded by `timeout_s` (`GroupCommitTimeout`), as SQLite's busy timeout bounds the wait
    for its write lock. `commits` counts the batches committed, `members` the write
    transactions they held. A batch that committed leaves its connection for the next one
    (opening one costs more than a small write); a batch that failed closes its own.
    """

    def __init__(self, connect: Callable[[], Connection], *, timeout_s: float) -> None:
        self._connect = connect
        self.timeout_s = timeout_s
        self._lock = threading.Lock()
        self._queue = threading.Lock()
        self._queued = 0
        self._batch: _Batch | None = None
        self._idle: Connection | None = None
        self._closed = False
        self.commits = 0
        self.members = 0

    @contextmanager
    def member(self) -> Iterator[Connection]:
        """A connection in this write's transaction or savepoint; on a clean exit, return
        once the batch holding it committed (or raise what failed the batch)."""
        with self._queue:
            self._queued += 1
        acquired = self._lock.acquire(timeout=self.timeout_s)
        with self._queue:
            self._queued -= 1
        if not acquired:
            raise GroupCommitTimeout(
                f"another write of this process held the database for {self.timeout_s:g} s"
            )
        batch: _Batch | None = None
        try:
            batch, nested = self._join()
            try:
                yield batch.conn
            except BaseException as exc:
                self._leave(batch, nested, exc)
                raise
            try:
                if nested is not None:
                    nested.commit()
            except BaseException as exc:
                self._end(batch, exc, rollback=True)
                raise
            batch.members += 1
        except BaseException:
            if batch is not None:
                self._commit_unless_followed(batch)
            self._lock.release()
            raise
        self._commit_unless_followed(batch)
        self._lock.release()
        self._await(batch)

    def close(self) -> None:
        """Roll back an open batch (its members were never told it committed) and close
        the connection kept for the next one."""
        with self._lock:
            self._closed = True
            idle, self._idle = self._idle, None
            if idle is not None:
                with suppress(Exception):
                    idle.close()
            batch = self._batch
            if batch is not None:
                closed = StoreUnavailable(
                    "the store was closed before this write's commit: nothing of it was kept",
                    reason="the store was closed",
                )
                self._end(batch, closed, rollback=True)

    def _await(self, batch: _Batch) -> None:
        """Wait for `batch`'s commit. A batch left open for a write that then gave up
        waiting for the connection is committed here."""
        while not batch.done.wait(_STRANDED_S):
            if self._lock.acquire(blocking=False):
                try:
                    self._commit_unless_followed(batch)
                finally:
                    self._lock.release()
        batch.outcome()

    def _join(self) -> tuple[_Batch, NestedTransaction | None]:
        """The open batch and a savepoint in it, or a new batch (no savepoint: alone in it
        until it returns)."""
        if self._batch is not None:
            return self._batch, self._batch.conn.begin_nested()
        conn, self._idle = self._idle or self._connect(), None
        try:
            root = conn.begin()
        except BaseException:
            conn.close()
            raise
        self._batch = _Batch(conn, root)
        return self._batch, None

    def _leave(self, batch: _Batch, nested: NestedTransaction | None, exc: BaseException) -> None:
        """Undo a failed member: its savepoint, or the batch it opened alone. When SQLite
        rolled the whole transaction back on its own (an I/O error, a full disk), the batch
        is lost: its members are told so."""
        if nested is None:
            self._end(batch, exc, rollback=True)
            return
        try:
            nested.rollback()
            alive = _in_transaction(batch.conn)
        except Exception:
            alive = False
        if not alive:
            self._end(batch, exc, rollback=True)

    def _commit_unless_followed(self, batch: _Batch) -> None:
        """Commit `batch` when no write is queued for the connection (the last of those
        queued commits it); otherwise leave it open for them."""
        if self._batch is not batch:
            return
        with self._queue:
            followed = self._queued > 0
        if followed:
            return
        try:
            batch.root.commit()
        except BaseException as exc:
            self._end(batch, exc, rollback=True)
            return
        self.commits += 1
        self.members += batch.members
        self._end(batch, None, rollback=False)

    def _end(self, batch: _Batch, error: BaseException | None, *, rollback: bool) -> None:
        """Close `batch` (rolled back first when `rollback`: SQLite can hold a transaction
        open after a COMMIT that failed, unknown to SQLAlchemy) and wake its members. The
        connection of a batch that committed is kept for the next batch; any other is
        closed."""
        if rollback:
            with suppress(Exception):
                if batch.root.is_active:
                    batch.root.rollback()
            with suppress(Exception):
                if _in_transaction(batch.conn):
                    _driver(batch.conn).rollback()
        if rollback or self._closed:
            with suppress(Exception):
                batch.conn.close()
        else:
            self._idle = batch.conn
        if batch.members:
            batch.error = error
        self._batch = None
        batch.done.set()


def _driver(conn: Connection) -> sqlite3.Connection:
    raw = conn.connection.driver_connection
    assert isinstance(raw, sqlite3.Connection)
    return raw


def _in_transaction(conn: Connection) -> bool:
    return _driver(conn).in_transaction


def _copied(error: BaseException) -> BaseException:
    """A copy of `error` to raise in one more thread (each raise owns its traceback)."""
    try:
        found = copy.copy(error)
    except Exception:
        return error
    return found if isinstance(found, BaseException) else error
