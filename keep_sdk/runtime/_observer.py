"""Tell observers about run, ledger and escalation changes: one listener on the store.

The store reports every run record and ledger entry a commit point changed,
with the record before and after, once the transaction committed. `Observer`
turns those into observations and keeps nothing: what it was told is gone once
it was passed on, so a long-running worker's memory does not grow with history.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from keep_sdk.contract.observations import Escalated, LedgerChanged, RunChanged
from keep_sdk.stores import LedgerChange, RunChange, SupportsChangeListeners

if TYPE_CHECKING:
    from collections.abc import Callable

    from keep_sdk.contract.observations import Observation
    from keep_sdk.model import Escalation
    from keep_sdk.stores import Store, StoreChange

__all__ = ["Observer"]


class Observer:
    """Listens to `store` and calls `notify` for each change an observer cares about.

    A run is reported when it is created and whenever its status or phase
    changes; a ledger entry when it is created and whenever its status changes.
    A store that does not report changes (`SupportsChangeListeners`) reports
    nothing but escalations. `close` stops listening.
    """

    def __init__(self, store: Store, notify: Callable[[Observation], None]) -> None:
        self._notify = notify
        self._store = store if isinstance(store, SupportsChangeListeners) else None
        if self._store is not None:
            self._store.add_listener(self.changed)

    def changed(self, change: StoreChange) -> None:
        """Pass on `change` if it is a creation or a change of status (or a run's phase)."""
        match change:
            case RunChange(before=before, after=after):
                if before is None or (before.status, before.phase) != (after.status, after.phase):
                    self._notify(RunChanged(run=after, previous=before))
            case LedgerChange(before=before, after=after):
                if before is None or before.status != after.status:
                    self._notify(LedgerChanged(entry=after, previous=before))

    def escalated(self, escalation: Escalation) -> None:
        """Report that a run now waits for a person."""
        self._notify(Escalated(escalation=escalation))

    def close(self) -> None:
        """Stop listening to the store."""
        if self._store is not None:
            self._store.remove_listener(self.changed)
            self._store = None
