"""Tell observer plugins about run, ledger and escalation changes, once each."""

from __future__ import annotations

from typing import TYPE_CHECKING

from keep_sdk.contract.observations import Escalated, LedgerChanged, RunChanged

if TYPE_CHECKING:
    from collections.abc import Callable

    from keep_sdk.contract.observations import Observation
    from keep_sdk.model import Escalation, LedgerEntry, RunRecord

__all__ = ["Observer"]


class Observer:
    """Remembers the last record it reported, so a plugin hears of each change once.

    A run is reported when it is first seen and whenever its status or phase
    changes; a ledger entry when first seen and whenever its status changes.
    """

    def __init__(self, notify: Callable[[Observation], None]) -> None:
        self._notify = notify
        self._runs: dict[str, RunRecord] = {}
        self._entries: dict[str, LedgerEntry] = {}

    def run(self, run: RunRecord) -> RunRecord:
        """Report `run` if it changed; return it."""
        previous = self._runs.get(run.id)
        if previous is None or (previous.status, previous.phase) != (run.status, run.phase):
            self._notify(RunChanged(run=run, previous=previous))
        self._runs[run.id] = run
        return run

    def ledger(self, entry: LedgerEntry) -> LedgerEntry:
        """Report `entry` if it changed; return it."""
        previous = self._entries.get(entry.id)
        if previous is None or previous.status != entry.status:
            self._notify(LedgerChanged(entry=entry, previous=previous))
        self._entries[entry.id] = entry
        return entry

    def escalated(self, escalation: Escalation) -> None:
        """Report that a run now waits for a person."""
        self._notify(Escalated(escalation=escalation))
