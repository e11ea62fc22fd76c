"""Whether an installation is stalled: work waits and nothing progressed for a while."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass

from keep_sdk.stores import Store
from keep_sdk.telemetry._readings import read

__all__ = ["Stall", "check_stalled"]


@dataclass(frozen=True)
class Stall:
    """The answer of `check_stalled`: `stalled`, and the figures it was decided on."""

    stalled: bool
    pending: int
    """Pending events on subscribed topics of unpaused workflows."""
    due: int
    """Producers, consumer wakes, resumes and reconciliations due."""
    since: dt.datetime | None
    """The later of the latest progress (newest run change) and the oldest waiting event's
    arrival: work that just arrived has not stalled yet."""
    idle_s: float | None
    """Seconds from `since` to the check."""

    @property
    def waiting(self) -> int:
        """Pending events plus due work."""
        return self.pending + self.due

    def describe(self) -> str:
        """One line for people."""
        if not self.waiting:
            return "healthy: nothing waits"
        idle = f"{self.idle_s:.0f} s" if self.idle_s is not None else "ever"
        what = (
            f"{self.pending} pending event(s), {self.due} due item(s); "
            f"nothing progressed for {idle}"
        )
        return f"stalled: {what}" if self.stalled else f"healthy: {what}"


def check_stalled(store: Store, *, after_s: float, now: dt.datetime) -> Stall:
    """Stalled when work waits (pending events on a topic a consumer subscribes to, or due
    producers, wakes, resumes, reconciliations) and both the newest run change and the
    arrival of the oldest waiting event are more than `after_s` seconds before `now`."""
    found = read(store, now)
    waiting = found.waiting_work
    pending = sum(found.pending.values())
    known = [t for t in (found.last_progress, found.oldest_pending) if t is not None]
    since = max(known) if known else None
    idle_s = (now - since).total_seconds() if since is not None else None
    stalled = waiting > 0 and (idle_s is None or idle_s > after_s)
    return Stall(stalled=stalled, pending=pending, due=found.due, since=since, idle_s=idle_s)
