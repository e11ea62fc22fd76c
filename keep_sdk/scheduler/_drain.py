"""`Drain`: the consumer just run runs again without a new plan while it still has work.

A planning step reads a dozen indexed questions; a consumer with a backlog would
pay them before every one of its runs although the answer is the same task. So
after a consumer run that committed having reserved events, the scheduler runs the
same consumer again without planning while all of these hold:

- the run reserved events and committed (a failure, a pause, a run that reserved
  nothing ends the drain: the planner decides what follows);
- a subscribed topic still has a pending event (one indexed statement per topic,
  the consumer's topics as of the version the run ran on);
- the worker holds the workflow's lease with more than half its time left, as the
  planning step would use it without a write (a lease the heartbeat found lost is
  no longer held, which ends the drain; one due for renewal is renewed by the plan);
- the drain is within its budget: `runs` runs, and `seconds` both on the
  scheduler's clock and on the wall clock, since the plan it continues. Then the
  planner looks again, so due producers, other workflows' work, recoveries and
  durable deadlines wait at most one budget.
"""

from __future__ import annotations

import datetime as dt
import time
from dataclasses import dataclass

from keep_sdk.errors import NotFound
from keep_sdk.model import HandlerKind, RunRecord, RunStatus
from keep_sdk.scheduler._tasks import Task, TaskKind
from keep_sdk.stores import Store

__all__ = ["DEFAULT_DRAIN_RUNS", "DEFAULT_DRAIN_S", "Drain"]

DEFAULT_DRAIN_RUNS = 16
"""Consumer runs one plan may start before the planner looks again."""

DEFAULT_DRAIN_S = 0.25
"""Seconds (scheduler clock and wall clock) a drain may last before the planner looks again."""


@dataclass
class Drain:
    """One consumer being drained: the task the plan chose and what the drain has spent."""

    task: Task
    topics: tuple[str, ...]
    version: int
    started: dt.datetime
    started_wall: float
    runs: int = 1

    @classmethod
    def after(
        cls, store: Store, task: Task, run: RunRecord, planned: dt.datetime, planned_wall: float
    ) -> Drain | None:
        """The drain that may follow `run` (the first run of a consumer task planned at
        `planned`, scheduler clock, and `planned_wall`, `time.monotonic`), or None when the
        consumer's outcome asks for a plan."""
        if task.kind is not TaskKind.CONSUMER or not _has_more(run):
            return None
        try:
            handler = store.get_handler(run.workflow, run.handler)
        except NotFound:
            return None
        if handler.version != run.workflow_version:
            return None
        return cls(
            task=task,
            topics=tuple(handler.subscribe),
            version=run.workflow_version,
            started=planned,
            started_wall=planned_wall,
        )

    def within_budget(self, now: dt.datetime, *, runs: int, seconds: float) -> bool:
        """Whether one more run fits the budget since the plan."""
        if self.runs >= runs:
            return False
        if (now - self.started).total_seconds() >= seconds:
            return False
        return time.monotonic() - self.started_wall < seconds

    def pending(self, store: Store) -> bool:
        """Whether a subscribed topic still has a pending event."""
        workflow = self.task.workflow
        return any(store.pending_events(workflow, topic, limit=1) for topic in self.topics)

    def continues_after(self, run: RunRecord) -> bool:
        """Whether `run`, the drain's latest, leaves the drain going (counted)."""
        self.runs += 1
        return run.workflow_version == self.version and _has_more(run)


def _has_more(run: RunRecord) -> bool:
    """A consumer run that committed having reserved events: its topics may hold more."""
    prepared = run.prepare_result
    return (
        run.kind is HandlerKind.CONSUMER
        and run.status is RunStatus.COMMITTED
        and prepared is not None
        and bool(prepared.reservations)
    )
