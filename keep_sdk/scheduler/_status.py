"""What ``keep status`` shows: inputs → outputs in the user's terms, and what waits for a person.

`build_status` reads the store into a `StatusReport`, the JSON of
``keep status --json``; the command line renders it for people. It reads counts,
the newest rows and what is unfinished, never a workflow's whole history.
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
from keep_sdk.stores import (
    DEFAULT_STORE_URL,
    Lease,
    StatusCounts,
    Store,
    SupportsCounts,
    SupportsDurable,
    SupportsPages,
)

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

    The report does not read history: counts come from the store's indexes
    (`SupportsCounts`), inputs and outputs from the newest pages (`SupportsPages`),
    and what waits from the unfinished runs and each handler's latest run, all in one
    snapshot. A store without those capabilities is read in full.
    """
    suffix = "" if store_url == DEFAULT_STORE_URL else f" --store {shlex.quote(store_url)}"
    can_reconcile = reconcilable or (lambda _connector, _operation: False)
    with store.reading():
        records = [store.get_workflow(workflow)] if workflow else store.list_workflows()
        reader = _Reader(store, workflow)
        statuses = []
        for record in records:
            lease = reader.leases.get(record.name)
            live = lease is not None and not lease.expired(now)
            waiting_runs, entries = reader.waiting(record.name)
            statuses.append(
                WorkflowStatus(
                    name=record.name,
                    version=record.version,
                    paused=record.paused,
                    grants=record.grants,
                    worker=lease.owner if lease is not None and live else None,
                    inputs=[_input(e) for e in reader.inputs(record.name, limit)],
                    outputs=[_output(entry) for entry in reader.outputs(record.name, limit)],
                    waiting=_waiting(
                        store,
                        record.name,
                        record.paused,
                        waiting_runs,
                        entries,
                        suffix,
                        can_reconcile,
                    ),
                    events=reader.counts.events.get(record.name, {}),
                    runs=reader.counts.runs.get(record.name, {}),
                    next_runs={
                        h.name: h.next_run_at
                        for h in reader.handlers
                        if h.workflow == record.name
                        and h.kind is HandlerKind.PRODUCER
                        and h.next_run_at is not None
                        and h.version == record.version
                    },
                )
            )
    return StatusReport(store=store_url, workflows=statuses)


_WAITS = (
    RunStatus.PAUSED_APPROVAL,
    RunStatus.PAUSED_RECONCILIATION,
    RunStatus.PAUSED_WAITING,
    RunStatus.PAUSED_TIMEOUT,
    RunStatus.PAUSED_TRANSIENT,
)
_FAILED = (RunStatus.FAILED_LOGIC, RunStatus.FAILED_INTERNAL)
_INPUT_PAGES = 20
"""How many pages of events, newest first, the report reads to find a workflow's inputs."""


class _Reader:
    """The report's queries: a fixed number per report, per workflow and per handler, none
    of which reads the rows of history."""

    def __init__(self, store: Store, workflow: str | None) -> None:
        self.store = store
        self.workflow = workflow
        self.leases: dict[str, Lease] = {lease.workflow: lease for lease in store.list_leases()}
        self.handlers = [
            h for h in store.list_handlers(workflow) if workflow is None or h.workflow == workflow
        ]
        self.counts = self._counts()
        waiting = [*store.list_runs(workflow=workflow, status=_WAITS), *self._failures()]
        waiting.sort(key=lambda r: (r.created_at, r.id))
        self._waiting: dict[str, list[RunRecord]] = {}
        for run in waiting:
            self._waiting.setdefault(run.workflow, []).append(run)
        self._entries = self._ledger([r.id for r in waiting])

    def _counts(self) -> StatusCounts:
        if isinstance(self.store, SupportsCounts):
            return self.store.count_by_status(self.workflow)
        names = [self.workflow] if self.workflow else [w.name for w in self.store.list_workflows()]
        events = {n: Counter(e.status.value for e in self.store.list_events(n)) for n in names}
        runs = {n: Counter(r.status.value for r in self.store.list_runs(workflow=n)) for n in names}
        return StatusCounts(
            events={n: dict(c) for n, c in events.items() if c},
            runs={n: dict(c) for n, c in runs.items() if c},
        )

    def _failures(self) -> list[RunRecord]:
        """Failed runs a person must act on: a handler's latest run, failed, not retried
        (an earlier failure was superseded by the later run)."""
        found = []
        for handler in self.handlers:
            latest = self.store.list_runs(
                workflow=handler.workflow, handler=handler.name, newest_first=True, limit=1
            )
            if latest and latest[0].status in _FAILED and not is_superseded(self.store, latest[0]):
                found.append(latest[0])
        return found

    def _ledger(self, run_ids: list[str]) -> dict[str, LedgerEntry]:
        if isinstance(self.store, SupportsPages):
            return {e.run_id: e for e in self.store.ledger_for_runs(run_ids)}
        found = (self.store.ledger_entry_for_run(run_id) for run_id in run_ids)
        return {e.run_id: e for e in found if e is not None}

    def waiting(self, workflow: str) -> tuple[list[RunRecord], dict[str, LedgerEntry]]:
        """The workflow's runs that wait, oldest first, and their ledger entries by run."""
        runs = self._waiting.get(workflow, [])
        return runs, {r.id: self._entries[r.id] for r in runs if r.id in self._entries}

    def outputs(self, workflow: str, limit: int) -> list[LedgerEntry]:
        """The newest `limit` ledger entries, oldest first."""
        if isinstance(self.store, SupportsPages):
            return self.store.page_ledger(workflow=workflow, limit=limit)[::-1]
        return self.store.list_ledger(workflow=workflow)[-limit:]

    def inputs(self, workflow: str, limit: int) -> list[Event]:
        """The newest `limit` events that came from outside (not published by one of the
        workflow's consumer runs), oldest first; at most `_INPUT_PAGES` pages are read."""
        store = self.store
        if not isinstance(store, SupportsPages):
            consumer_runs = {
                r.id for r in store.list_runs(workflow=workflow) if r.kind is HandlerKind.CONSUMER
            }
            events = store.list_events(workflow)
            return [e for e in events if e.created_by not in consumer_runs][-limit:]
        size = max(limit, 1) * 2
        found: list[Event] = []
        before: str | None = None
        for _ in range(_INPUT_PAGES):
            page = store.page_events(workflow, before=before, limit=size)
            creators = sorted({e.created_by for e in page if e.created_by is not None})
            consumers = {
                r.id for r in store.runs_by_ids(creators) if r.kind is HandlerKind.CONSUMER
            }
            found += [e for e in page if e.created_by not in consumers]
            if len(found) >= limit or len(page) < size:
                break
            before = page[-1].id
        return found[:limit][::-1]


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
    entries: dict[str, LedgerEntry],
    suffix: str,
    reconcilable: Reconcilable,
) -> list[Waiting]:
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
            case RunStatus.FAILED_LOGIC | RunStatus.FAILED_INTERNAL:
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
