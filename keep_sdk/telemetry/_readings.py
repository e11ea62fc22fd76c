"""What the store says about work waiting and progress, read in one snapshot."""

from __future__ import annotations

import datetime as dt
from collections import Counter
from dataclasses import dataclass, field

from keep_sdk.model import EventStatus, RunStatus
from keep_sdk.stores import Store, SupportsCounts

__all__ = ["PENDING_CAP", "Readings", "read"]

PENDING_CAP = 10_000
"""Pending events counted per workflow at most (a scrape must stay cheap with a backlog)."""

_NEWEST_RUNS = 20
"""Newest runs read to find the latest progress (a run's latest change is its ``updated_at``)."""

_PARKED = frozenset(s for s in RunStatus if s.value.startswith("paused:"))


@dataclass
class Readings:
    """One snapshot of the store: runs by status, pending events by topic, what is due."""

    runs: dict[tuple[str, str], int] = field(default_factory=dict)
    """(workflow, run status) → runs."""
    pending: dict[tuple[str, str], int] = field(default_factory=dict)
    """(workflow, topic) → pending events on a topic a consumer of the workflow subscribes to
    (at most `PENDING_CAP` per workflow)."""
    due: int = 0
    """Producers, consumer wakes, runs to resume and reconciliations due now."""
    last_progress: dt.datetime | None = None
    """The newest change to a run (its ``updated_at``), if any run exists."""
    oldest_pending: dt.datetime | None = None
    """When the oldest pending event counted in `pending` was published."""

    @property
    def parked(self) -> dict[tuple[str, str], int]:
        """(workflow, paused status) → runs that wait (``paused:*``)."""
        return {key: n for key, n in self.runs.items() if key[1] in _PARKED}

    @property
    def waiting_work(self) -> int:
        """Pending events plus due work: what a healthy worker would pick up."""
        return sum(self.pending.values()) + self.due


def read(store: Store, now: dt.datetime) -> Readings:
    """Read `store` once: runs by status, pending events on subscribed topics, due work and
    the latest progress. Store errors propagate."""
    found = Readings()
    with store.reading():
        for workflow in store.list_workflows():
            name = workflow.name
            subscribed = {
                topic for handler in store.list_handlers(name) for topic in handler.subscribe
            }
            pending = store.list_events(name, status=EventStatus.PENDING, limit=PENDING_CAP)
            counted = [event for event in pending if event.topic in subscribed]
            for topic, n in Counter(event.topic for event in counted).items():
                found.pending[(name, topic)] = n
            if counted and not workflow.paused:
                oldest = min(event.created_at for event in counted)
                if found.oldest_pending is None or oldest < found.oldest_pending:
                    found.oldest_pending = oldest
            if workflow.paused:
                for key in [k for k in found.pending if k[0] == name]:
                    del found.pending[key]
        for run in store.list_runs(newest_first=True, limit=_NEWEST_RUNS):
            if found.last_progress is None or run.updated_at > found.last_progress:
                found.last_progress = run.updated_at
        if isinstance(store, SupportsCounts):
            counts = store.count_by_status().runs
            found.runs = {(wf, st): n for wf, by in counts.items() for st, n in by.items()}
        else:
            for run in store.list_runs():
                key = (run.workflow, run.status.value)
                found.runs[key] = found.runs.get(key, 0) + 1
        found.due = (
            len(store.due_producers(now))
            + len(store.consumers_to_wake(now))
            + len(store.due_reconciliations(now))
            + sum(
                1
                for run in store.list_runs(status=RunStatus.PAUSED_TRANSIENT)
                if run.resume_at is not None and run.resume_at <= now
            )
        )
    return found
