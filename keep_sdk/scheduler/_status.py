"""What ``keep status`` shows: inputs → outputs in the user's terms, and what waits for a person.

`build_status` reads the store into a `StatusReport`, the JSON of
``keep status --json``; the command line renders it for people.
"""

from __future__ import annotations

import datetime as dt
import shlex
from collections import Counter
from collections.abc import Callable

from pydantic import BaseModel, ConfigDict, Field, JsonValue
from pydantic.alias_generators import to_camel

from keep_sdk.model import (
    Event,
    HandlerKind,
    LedgerEntry,
    LedgerStatus,
    RunRecord,
    RunStatus,
    UtcDatetime,
)
from keep_sdk.runtime import ledger_decision
from keep_sdk.scheduler._planner import is_superseded
from keep_sdk.stores import DEFAULT_STORE_URL, Store, SupportsDurable

__all__ = [
    "Input",
    "Output",
    "Reconcilable",
    "StatusReport",
    "Waiting",
    "WorkflowStatus",
    "build_status",
]

Reconcilable = Callable[[str, str], bool]
"""Whether ``connector.operation`` can reconcile (so ``keep resolve --retry`` can ask again)."""


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


class Waiting(_View):
    """Something that waits: for a person (with the commands that resolve it) or for time."""

    subject: str
    why: str
    needs_person: bool
    commands: list[str] = Field(default_factory=list)
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
    waiting: list[Waiting]
    events: dict[str, int] = Field(description="Events by status.")
    runs: dict[str, int] = Field(description="Runs by status.")
    next_runs: dict[str, UtcDatetime] = Field(
        default_factory=dict, description="When each producer is next due."
    )


class StatusReport(_View):
    """``keep status --json``."""

    store: str
    workflows: list[WorkflowStatus]


def build_status(
    store: Store,
    *,
    store_url: str,
    now: dt.datetime,
    workflow: str | None = None,
    limit: int = 10,
    reconcilable: Reconcilable | None = None,
) -> StatusReport:
    """Read the store into a report; `limit` bounds the inputs and outputs listed per workflow.

    Every suggested command is complete: full run ids, and ``--store URL`` when
    `store_url` is not the default store. ``keep resolve RUN --retry`` is
    suggested for an indeterminate mutation only when `reconcilable` says its
    operation can reconcile (without `reconcilable`, it is not suggested).
    """
    suffix = "" if store_url == DEFAULT_STORE_URL else f" --store {shlex.quote(store_url)}"
    can_reconcile = reconcilable or (lambda _connector, _operation: False)
    records = [store.get_workflow(workflow)] if workflow else store.list_workflows()
    statuses = []
    for record in records:
        events = store.list_events(record.name)
        runs = store.list_runs(workflow=record.name)
        ledger = store.list_ledger(workflow=record.name)
        lease = store.get_lease(record.name)
        live = lease is not None and not lease.expired(now)
        statuses.append(
            WorkflowStatus(
                name=record.name,
                version=record.version,
                paused=record.paused,
                grants=record.grants,
                worker=lease.owner if lease is not None and live else None,
                inputs=[_input(e) for e in _inputs(events, runs)[-limit:]],
                outputs=[_output(entry) for entry in ledger[-limit:]],
                waiting=_waiting(
                    store, record.name, record.paused, runs, ledger, suffix, can_reconcile
                ),
                events=dict(Counter(e.status.value for e in events)),
                runs=dict(Counter(r.status.value for r in runs)),
                next_runs={
                    h.name: h.next_run_at
                    for h in store.list_handlers(record.name)
                    if h.kind is HandlerKind.PRODUCER
                    and h.next_run_at is not None
                    and h.version == record.version
                },
            )
        )
    return StatusReport(store=store_url, workflows=statuses)


def _inputs(events: list[Event], runs: list[RunRecord]) -> list[Event]:
    """What came in from outside: events from producers or other systems, not the
    intermediate events the workflow's consumers publish."""
    consumer_runs = {r.id for r in runs if r.kind is HandlerKind.CONSUMER}
    return [e for e in events if e.created_by not in consumer_runs]


def _input(event: Event) -> Input:
    return Input(
        title=event.title,
        topic=event.topic,
        status=event.status.value,
        event_id=event.id,
        at=event.created_at,
    )


def _output(entry: LedgerEntry) -> Output:
    return Output(
        title=entry.ui_title or f"ctx.{entry.connector}.{entry.operation}",
        operation=f"{entry.connector}.{entry.operation}",
        status=entry.status.value,
        result=entry.result,
        error=entry.error,
        decision=ledger_decision(entry),
        run_id=entry.run_id,
        at=entry.updated_at,
    )


def _subject(run: RunRecord, entry: LedgerEntry | None) -> str:
    if entry is not None and entry.ui_title:
        return entry.ui_title
    if run.prepare_result is not None and run.prepare_result.ui and run.prepare_result.ui.title:
        return run.prepare_result.ui.title
    return f"{run.handler} ({run.kind.value} run {run.id})"


def _waiting(
    store: Store,
    workflow: str,
    paused: bool,
    runs: list[RunRecord],
    ledger: list[LedgerEntry],
    suffix: str,
    reconcilable: Reconcilable,
) -> list[Waiting]:
    entries = {e.run_id: e for e in ledger}
    waiting = []
    if paused:
        waiting.append(
            Waiting(
                subject=f"workflow {workflow}",
                why="a person paused it; no run starts until it is resumed",
                needs_person=True,
                commands=[f"keep resume {shlex.quote(workflow)}{suffix}"],
            )
        )
    for run in runs:
        entry = entries.get(run.id)
        subject = _subject(run, entry)
        match run.status:
            case RunStatus.PAUSED_APPROVAL:
                permission = run.waiting_permission
                grant = f"keep grant {shlex.quote(workflow)} {shlex.quote(permission or '')}"
                waiting.append(
                    Waiting(
                        subject=subject,
                        why=run.error or "waits for a permission",
                        needs_person=True,
                        commands=[f"{grant}{suffix}"] if permission else [],
                        run_id=run.id,
                    )
                )
            case RunStatus.PAUSED_RECONCILIATION if (
                entry is not None and entry.status is LedgerStatus.NEEDS_RECONCILE
            ):
                waiting.append(
                    Waiting(
                        subject=subject,
                        why=f"not known yet whether it happened; checking again at "
                        f"{entry.next_reconcile_at:%Y-%m-%d %H:%M:%S} UTC"
                        if entry.next_reconcile_at
                        else "not known yet whether it happened",
                        needs_person=False,
                        run_id=run.id,
                    )
                )
            case RunStatus.PAUSED_RECONCILIATION:
                waiting.append(
                    Waiting(
                        subject=subject,
                        why=f"nobody can tell whether it happened: {run.error}",
                        needs_person=True,
                        commands=[
                            f"keep resolve {run.id} {choice}{suffix}"
                            for choice in _resolutions(entry, reconcilable)
                        ],
                        run_id=run.id,
                    )
                )
            case RunStatus.PAUSED_WAITING:
                waiting.append(_parked(store, run, subject, suffix))
            case RunStatus.PAUSED_TIMEOUT:
                waiting.append(
                    Waiting(
                        subject=subject,
                        why=f"timed out: {run.error}",
                        needs_person=True,
                        commands=[
                            f"keep wait {run.id} --extend P7D{suffix}",
                            f"keep wait {run.id} --start-again{suffix}",
                            f"keep wait {run.id} --supply JSON{suffix}",
                            f"keep wait {run.id} --skip{suffix}",
                            f"keep cancel {run.id}{suffix}",
                        ],
                        run_id=run.id,
                    )
                )
            case RunStatus.PAUSED_TRANSIENT:
                when = f" at {run.resume_at:%Y-%m-%d %H:%M:%S} UTC" if run.resume_at else ""
                waiting.append(
                    Waiting(
                        subject=subject,
                        why=f"will try again{when} after a temporary failure: {run.error}",
                        needs_person=False,
                        run_id=run.id,
                    )
                )
            case RunStatus.FAILED_LOGIC | RunStatus.FAILED_INTERNAL if not is_superseded(
                store, run
            ):
                waiting.append(
                    Waiting(
                        subject=subject,
                        why=f"{run.status.value}: {run.error}",
                        needs_person=True,
                        commands=[
                            f"keep run FILE{suffix}  (deploy a fixed script)",
                            f"keep resolve {run.id} --retry{suffix}",
                        ],
                        run_id=run.id,
                    )
                )
            case _:
                pass
    return waiting


def _parked(store: Store, run: RunRecord, subject: str, suffix: str) -> Waiting:
    """A parked run: what it waits for, until when, and how to deliver the result."""
    invocation = store.invocation_for_run(run.id) if isinstance(store, SupportsDurable) else None
    if invocation is None:
        return Waiting(
            subject=subject,
            why="waits for its durable operation",
            needs_person=False,
            run_id=run.id,
        )
    until = (
        f" until {invocation.timeout_at:%Y-%m-%d %H:%M:%S} UTC"
        if invocation.timeout_at is not None
        else ""
    )
    how = "polled" if invocation.polling else "notified"
    return Waiting(
        subject=subject,
        why=f"waits for ctx.{invocation.connector}.{invocation.operation} to be {how}{until} "
        f"(correlation key {invocation.correlation_key})",
        needs_person=False,
        commands=[
            f"keep notify {invocation.correlation_key} --result JSON{suffix}",
            f"keep cancel {run.id}{suffix}",
        ],
        run_id=run.id,
    )


def _resolutions(entry: LedgerEntry | None, reconcilable: Reconcilable) -> list[str]:
    """The ``keep resolve`` choices the run's mutation allows: ``--retry`` only when its
    operation can reconcile."""
    choices = ["--didnt-happen", "--skip"]
    if entry is not None and reconcilable(entry.connector, entry.operation):
        choices.insert(0, "--retry")
    return choices
