"""What the scheduler can do next (`Task`) and what it did (`Activity`)."""

from __future__ import annotations

from enum import StrEnum

from pydantic import BaseModel, ConfigDict, Field
from pydantic.alias_generators import to_camel

from keep_sdk.model import (
    HandlerKind,
    LedgerEntry,
    MutationApplied,
    MutationSkipped,
    RunRecord,
    RunStatus,
    UtcDatetime,
)

__all__ = ["Activity", "Task", "TaskKind"]


class TaskKind(StrEnum):
    """The kinds of work, in the order the scheduler prefers them."""

    RECOVER = "recover"
    """Active runs of a workflow nobody holds a lease on: their host stopped (restart recovery)."""
    RECONCILE = "reconcile"
    """A ``needs_reconcile`` mutation whose next attempt is due."""
    DELIVER = "deliver"
    """A notification arrived for a parked run (``paused:waiting``): complete it, run ``next``."""
    TIMEOUT = "timeout"
    """A parked durable operation's deadline passed: time it out and tell a person."""
    POLL = "poll"
    """A polled durable operation whose next poll (``next_poll_at``) is due."""
    RESUME = "resume"
    """A ``paused:transient`` run whose backoff (``resume_at``) has run out."""
    RETRY = "retry"
    """A failed run of an older version: the workflow was updated, so try it again."""
    CONSUMER = "consumer"
    """A consumer with pending events in a subscribed topic or a due wakeAt."""
    PRODUCER = "producer"
    """A producer whose schedule is due."""


_CONSUMER_SIDE = (
    TaskKind.RECONCILE,
    TaskKind.DELIVER,
    TaskKind.RESUME,
    TaskKind.RETRY,
    TaskKind.CONSUMER,
)


class Task(BaseModel):
    """One unit of work for one workflow; the scheduler runs the first it can lease.

    `due_at` orders tasks of the same rank: for a consumer the time of its
    oldest pending event (or its wakeAt), for a producer its ``next_run_at``,
    for a paused run its ``resume_at``, for a reconciliation ``next_reconcile_at``.
    """

    model_config = ConfigDict(
        frozen=True,
        extra="forbid",
        alias_generator=to_camel,
        populate_by_name=True,
    )

    kind: TaskKind
    workflow: str
    handler: str | None = None
    run_id: str | None = None
    ledger_id: str | None = None
    notification_id: str | None = None
    invocation_id: str | None = None
    due_at: UtcDatetime
    reason: str = Field(description="Why the task is due, in a person's words.")
    producer_side: bool = Field(
        default=False, description="Work of a producer (ranks after every consumer's work)."
    )

    @property
    def rank(self) -> int:
        """0 recovery, 1 consumer work (oldest first), 2 producer work (earliest first)."""
        if self.kind is TaskKind.RECOVER:
            return 0
        if self.kind in _CONSUMER_SIDE and not self.producer_side:
            return 1
        return 2

    def sort_key(self) -> tuple[int, float, str, str]:
        """Consumers before producers, then the oldest due work first, then by name."""
        return (self.rank, self.due_at.timestamp(), self.workflow, self.handler or "")


class Activity(BaseModel):
    """What one scheduler step did: the task and the runs as they ended."""

    model_config = ConfigDict(
        frozen=True,
        extra="forbid",
        alias_generator=to_camel,
        populate_by_name=True,
    )

    task: Task
    at: UtcDatetime
    worker: str
    runs: list[RunRecord] = Field(default_factory=list)
    ledger: LedgerEntry | None = None

    @property
    def run(self) -> RunRecord | None:
        """The last run the step touched (a recovery may touch several)."""
        return self.runs[-1] if self.runs else None

    def describe(self) -> str:
        """One line for a person: what ran and how it ended."""
        task = self.task
        who = f"{task.workflow}/{task.handler}" if task.handler else task.workflow
        if task.kind is TaskKind.RECOVER:
            ended = ", ".join(f"{r.handler} {r.status.value}" for r in self.runs) or "nothing"
            return f"{who}: recovered after a restart ({ended})"
        if task.kind is TaskKind.RECONCILE and self.ledger is not None:
            return f"{who}: checked whether {_mutation(self.ledger)} happened: {self.ledger.status}"
        run = self.run
        if run is None:
            return f"{who}: {task.kind.value} ({task.reason})"
        prefix = {
            TaskKind.RESUME: "resumed: ",
            TaskKind.RETRY: "retried: ",
            TaskKind.RECONCILE: "after checking: ",
            TaskKind.DELIVER: "result arrived: ",
            TaskKind.POLL: "polled: ",
        }.get(task.kind, "")
        return f"{who}: {prefix}{_outcome(run)}"


def _mutation(entry: LedgerEntry) -> str:
    return entry.ui_title or f"ctx.{entry.connector}.{entry.operation}"


def _outcome(run: RunRecord) -> str:
    """What a run did, in the user's terms: the mutation's title and how it ended."""
    if run.kind is HandlerKind.PRODUCER:
        if run.status is RunStatus.COMMITTED:
            return "checked for new input"
        return f"{run.status.value}: {run.error}"
    prepared = run.prepare_result
    title = prepared.ui.title if prepared is not None and prepared.ui else None
    if prepared is not None and not prepared.reservations and run.status is RunStatus.COMMITTED:
        return "nothing to do"
    subject = title or f"run {run.id}"
    if run.status is RunStatus.COMMITTED:
        result = run.mutation_result
        if isinstance(result, MutationApplied):
            return f"{subject}: done" + (f" ({_brief(result.result)})" if result.result else "")
        if isinstance(result, MutationSkipped):
            return f"{subject}: skipped by a person"
        return f"{subject}: done (no change needed)"
    detail = f": {run.error}" if run.error else ""
    return f"{subject}: {run.status.value} at {run.phase.value}{detail}"


def _brief(value: object) -> str:
    if isinstance(value, dict):
        return ", ".join(f"{k}={v}" for k, v in value.items())
    return str(value)
