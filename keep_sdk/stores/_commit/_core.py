"""`StoreCore`: what every commit point stands on: transactions, clock, faults, listeners."""

from __future__ import annotations

import datetime as dt
import threading
from abc import ABC, abstractmethod
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager, nullcontext

from keep_sdk.stores._changes import ChangeListener, deliver
from keep_sdk.stores._commit.work import Work
from keep_sdk.stores._protocol import Clock, FaultHook, utc_now
from keep_sdk.stores._transaction import Transaction
from keep_sdk.stores.faults import FaultPoint

__all__ = ["StoreCore"]


class StoreCore(ABC):
    """A store whose backend supplies `transaction()`; the commit points build on `_commit`.

    `clock` supplies the time (aware UTC); `fault_hook`, when set, is called with
    a `FaultPoint` between the writes of every commit point.
    """

    def __init__(self, *, clock: Clock = utc_now, fault_hook: FaultHook | None = None) -> None:
        self.clock = clock
        self.fault_hook = fault_hook
        self._listeners: tuple[ChangeListener, ...] = ()
        self._reader = threading.local()

    @abstractmethod
    def transaction(self, *, write: bool = True) -> AbstractContextManager[Transaction]:
        """Open a transaction: committed when the block ends, rolled back when it raises."""

    @abstractmethod
    def close(self) -> None:
        """Release connections; the store must not be used afterwards."""

    def add_listener(self, listener: ChangeListener) -> None:
        """See `SupportsChangeListeners.add_listener`."""
        self._listeners = (*self._listeners, listener)

    def remove_listener(self, listener: ChangeListener) -> None:
        """See `SupportsChangeListeners.remove_listener`."""
        self._listeners = tuple(x for x in self._listeners if x != listener)

    def _fault(self, point: FaultPoint) -> None:
        if self.fault_hook is not None:
            self.fault_hook(point)

    def _now(self) -> dt.datetime:
        return self.clock()

    @contextmanager
    def _commit(self) -> Iterator[Work]:
        """One commit point: a write transaction; its changes go to the listeners once it
        committed."""
        with self.transaction() as tx:
            work = Work(tx, self._now(), self._fault)
            yield work
        if self._listeners:
            deliver(self._listeners, work.changes())

    @contextmanager
    def reading(self) -> Iterator[None]:
        """See `Store.reading`: the block's queries share one read transaction."""
        if self._open_read() is not None:
            yield
            return
        with self.transaction(write=False) as tx:
            self._reader.tx = tx
            try:
                yield
            finally:
                self._reader.tx = None

    def _open_read(self) -> Transaction | None:
        """The read transaction of this thread's `reading` block, if one is open."""
        found: Transaction | None = getattr(self._reader, "tx", None)
        return found

    def _read(self) -> AbstractContextManager[Transaction]:
        shared = self._open_read()
        return nullcontext(shared) if shared is not None else self.transaction(write=False)
