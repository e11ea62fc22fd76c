"""Change records: what a commit point did to run records and ledger entries.

A store that supports listeners (`SupportsChangeListeners`) hands each
committed change to every listener after the transaction committed; nothing is
reported for a commit point that raised, and nothing is kept after delivery.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable
from typing import Protocol, runtime_checkable

from pydantic import BaseModel, ConfigDict

from keep_sdk.model import LedgerEntry, RunRecord

__all__ = [
    "ChangeListener",
    "LedgerChange",
    "RunChange",
    "StoreChange",
    "SupportsChangeListeners",
    "deliver",
]

_log = logging.getLogger("keep_sdk.stores")


class RunChange(BaseModel):
    """A run record a commit point created (`before` is None) or changed."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    before: RunRecord | None
    after: RunRecord


class LedgerChange(BaseModel):
    """A ledger entry a commit point created (`before` is None) or changed."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    before: LedgerEntry | None
    after: LedgerEntry


StoreChange = RunChange | LedgerChange

ChangeListener = Callable[[StoreChange], None]
"""Called once per change, after the commit point's transaction committed."""


@runtime_checkable
class SupportsChangeListeners(Protocol):
    """A store that reports the run and ledger changes of its commit points."""

    def add_listener(self, listener: ChangeListener) -> None:
        """Call `listener` with every `RunChange` and `LedgerChange` committed from now on.

        Changes of one commit point arrive in the order it wrote them, one
        commit point after the other, on the thread that committed, after the
        commit; a commit point that raised reports nothing. A listener that
        raises is logged and skipped: the commit stands and other listeners
        still hear of it. Changes made by other processes are not reported.
        """
        ...

    def remove_listener(self, listener: ChangeListener) -> None:
        """Stop calling `listener`; a listener that was never added is ignored."""
        ...


def deliver(listeners: Iterable[ChangeListener], changes: Iterable[StoreChange]) -> None:
    """Hand each change to each listener in order; log a listener that raises and go on."""
    for change in changes:
        for listener in listeners:
            try:
                listener(change)
            except Exception:
                _log.exception("store change listener %r failed; the commit stands", listener)
