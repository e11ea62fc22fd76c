"""`HeldReaders`: one SQLite connection kept per reading thread, for its read transactions.

Checking a connection out of SQLAlchemy's pool and in again costs more than a SQLite read
transaction itself (a `Connection` object, the pool's checkout and its reset on return).
A consumer run reads three times, so the store keeps each reading thread's connection
between transactions instead. A kept SQLite connection with no transaction open holds no
lock and no snapshot, so keeping it changes nothing another connection can see.

The store still opens one from the pool when a thread already has a read open on its
kept connection (a read inside a read), when `limit` threads already keep one (the pool
stays free for the rest), and on PostgreSQL, where a connection taken from the pool is
checked first (``pool_pre_ping``) and one kept across a server restart would not be.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress

from sqlalchemy import Connection

__all__ = ["HeldReaders"]


class _Held:
    __slots__ = ("busy", "conn")

    def __init__(self, conn: Connection) -> None:
        self.conn = conn
        self.busy = False


class HeldReaders:
    """Connections from `connect`, kept one per thread for at most `limit` threads.

    `reading()` yields the calling thread's kept connection (opened on first use) with no
    transaction open, or None when it cannot have one now; the caller then opens one of
    its own. A connection whose use raised is closed and forgotten: the thread's next read
    opens a new one. `close()` closes every kept connection.
    """

    def __init__(self, connect: Callable[[], Connection], *, limit: int) -> None:
        self._connect = connect
        self.limit = limit
        self._held: dict[int, _Held] = {}
        self._lock = threading.Lock()
        self._closed = False

    @contextmanager
    def reading(self) -> Iterator[Connection | None]:
        held = self._take()
        if held is None:
            yield None
            return
        try:
            yield held.conn
        except BaseException:
            self._forget(held)
            raise
        held.busy = False

    def close(self) -> None:
        with self._lock:
            self._closed = True
            held, self._held = list(self._held.values()), {}
        for each in held:
            with suppress(Exception):
                each.conn.close()

    def _take(self) -> _Held | None:
        thread = threading.get_ident()
        held = self._held.get(thread)
        if held is None:
            with self._lock:
                if self._closed or len(self._held) >= self.limit:
                    return None
                held = self._held[thread] = _Held(self._connect())
        if held.busy:
            return None
        held.busy = True
        return held

    def _forget(self, held: _Held) -> None:
        with self._lock:
            for thread, each in list(self._held.items()):
                if each is held:
                    del self._held[thread]
        with suppress(Exception):
            held.conn.close()
