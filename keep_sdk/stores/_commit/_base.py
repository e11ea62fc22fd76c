"""`TransactionalStore`: every commit point and query over a backend's `Transaction`."""

from __future__ import annotations

from keep_sdk.stores._commit._events import EventPoints
from keep_sdk.stores._commit._invocations import DurablePoints
from keep_sdk.stores._commit._leases import LeasePoints
from keep_sdk.stores._commit._ledger import LedgerPoints
from keep_sdk.stores._commit._runs import RunPoints
from keep_sdk.stores._commit._workflows import WorkflowPoints
from keep_sdk.stores._commit.queries import Queries

__all__ = ["TransactionalStore"]


class TransactionalStore(
    WorkflowPoints, EventPoints, RunPoints, LedgerPoints, LeasePoints, DurablePoints, Queries
):
    """A complete `Store` for a backend that implements `transaction()` and `close()`.

    Subclass it, call ``super().__init__(clock=..., fault_hook=...)``, and return a
    context manager yielding a `Transaction` from `transaction(write=...)`. Every
    commit point runs in one write transaction, calls `fault_hook` at its
    `FaultPoint`s and reports its run and ledger changes to listeners
    (`add_listener`) after the commit. Override a query to answer it with a
    cheaper statement of the backend's own.
    """
