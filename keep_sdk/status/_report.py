"""The status report's models: what came in, what went out, what waits, and what a person
can do about it, as data (the command line spells it as ``keep`` commands, the console as
buttons)."""

from __future__ import annotations

from collections.abc import Sequence
from enum import StrEnum

from pydantic import BaseModel, ConfigDict, Field, JsonValue
from pydantic.alias_generators import to_camel

from keep_sdk.model import UtcDatetime
from keep_sdk.runtime import ResolveChoice

__all__ = [
    "Input",
    "Output",
    "Remedy",
    "RemedyKind",
    "StatusReport",
    "Waiting",
    "WorkflowStatus",
]


class _View(BaseModel):
    model_config = ConfigDict(
        frozen=True,
        extra="forbid",
        alias_generator=to_camel,
        populate_by_name=True,
    )


class Input(_View):
    """An event that came in, by its title."""

    title: str
    topic: str
    status: str
    event_id: str
    at: UtcDatetime


class Output(_View):
    """A mutation that went out (or is trying to), by its ui title, with its result."""

    title: str
    operation: str
    status: str
    result: JsonValue = None
    error: str | None = None
    decision: str | None = Field(
        default=None, description="What a person decided about it, when one did."
    )
    run_id: str
    at: UtcDatetime


class RemedyKind(StrEnum):
    """What a person can do about something that waits; each is one `PersonActions` call
    (or, for ``deploy``, deploying a fixed script)."""

    DEPLOY = "deploy"
    """Deploy a fixed version of the workflow's script."""
    RESUME = "resume"
    """Resume the paused workflow."""
    GRANT = "grant"
    """Grant the workflow `Remedy.permission`."""
    RESOLVE = "resolve"
    """Resolve the run with `Remedy.choice` (`PersonActions.resolve`)."""
    EXTEND = "extend"
    """Give the run's timed-out durable operation a new deadline."""
    START_AGAIN = "start-again"
    """Start the run's durable operation's external work once more."""
    SUPPLY = "supply"
    """Supply the result of the run's timed-out durable operation."""
    SKIP_WAIT = "skip-wait"
    """Skip the run's durable operation: ``next`` sees it skipped."""
    NOTIFY = "notify"
    """Deliver the result the run waits for, by `Remedy.correlation_key`."""
    CANCEL = "cancel"
    """Cancel the run's wait: ``next`` sees it skipped."""


class Remedy(_View):
    """One thing a person can do about what waits: the kind and what it acts on."""

    kind: RemedyKind
    workflow: str
    run_id: str | None = None
    permission: str | None = Field(default=None, description="For grant.")
    choice: ResolveChoice | None = Field(default=None, description="For resolve.")
    correlation_key: str | None = Field(default=None, description="For notify.")


class Waiting(_View):
    """Something that waits: for a person (with what they can do) or for time."""

    subject: str
    why: str
    needs_person: bool
    remedies: list[Remedy] = Field(
        default_factory=list, description="What a person can do, the usual first."
    )
    run_id: str | None = None


class WorkflowStatus(_View):
    """One workflow: its version, what came in, what went out, what waits."""

    name: str
    version: int
    paused: bool
    grants: list[str]
    worker: str | None = Field(default=None, description="Worker holding its lease, if any.")
    inputs: list[Input] = Field(
        description="Events from producers or outside, not those the workflow's consumers "
        "publish on the way."
    )
    outputs: list[Output]
    waiting: Sequence[Waiting]
    events: dict[str, int] = Field(description="Events by status.")
    runs: dict[str, int] = Field(description="Runs by status.")
    next_runs: dict[str, UtcDatetime] = Field(
        default_factory=dict, description="When each producer is next due."
    )


class StatusReport(_View):
    """What came in, what went out and what waits, for every workflow of a store (the
    console's ``/api/status``)."""

    store: str = Field(description="The store's URL, its password (if any) shown as ``***``.")
    workflows: Sequence[WorkflowStatus]
