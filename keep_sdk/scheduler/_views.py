"""What ``keep status`` shows: inputs → outputs in the user's terms, and what waits for a person.

`build_status` reads the store into a `StatusReport` (the JSON of
``keep status --json``); `render_status` prints it with rich for people.
"""

from __future__ import annotations

import datetime as dt
from collections import Counter
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, JsonValue
from rich.console import Console, Group
from rich.panel import Panel
from rich.table import Table
from rich.text import Text

from keep_sdk.model import (
    Event,
    HandlerKind,
    LedgerEntry,
    LedgerStatus,
    RunRecord,
    RunStatus,
    UtcDatetime,
)
from keep_sdk.scheduler._planner import is_superseded
from keep_sdk.stores import Store

__all__ = [
    "Input",
    "Output",
    "StatusReport",
    "Waiting",
    "WorkflowStatus",
    "build_status",
    "event_table",
    "ledger_table",
    "render_status",
    "run_table",
]


class _View(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


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
) -> StatusReport:
    """Read the store into a report; `limit` bounds the inputs and outputs listed per workflow."""
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
                waiting=_waiting(store, record.name, record.paused, runs, ledger),
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
) -> list[Waiting]:
    entries = {e.run_id: e for e in ledger}
    waiting = []
    if paused:
        waiting.append(
            Waiting(
                subject=f"workflow {workflow}",
                why="a person paused it; no run starts until it is resumed",
                needs_person=True,
                commands=[f"keep resume {workflow}"],
            )
        )
    for run in runs:
        entry = entries.get(run.id)
        subject = _subject(run, entry)
        match run.status:
            case RunStatus.PAUSED_APPROVAL:
                permission = _permission(run.error)
                waiting.append(
                    Waiting(
                        subject=subject,
                        why=run.error or "waits for a permission",
                        needs_person=True,
                        commands=[f"keep grant {workflow} {permission}"] if permission else [],
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
                            f"keep resolve {run.id} --retry",
                            f"keep resolve {run.id} --didnt-happen",
                            f"keep resolve {run.id} --skip",
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
                            "keep run FILE  (deploy a fixed script)",
                            f"keep resolve {run.id} --retry",
                        ],
                        run_id=run.id,
                    )
                )
            case _:
                pass
    return waiting


def _permission(error: str | None) -> str | None:
    if not error or "permission '" not in error:
        return None
    return error.split("permission '", 1)[1].split("'", 1)[0]


# Rendering


def render_status(report: StatusReport, console: Console) -> None:
    """Print the report for people: one panel per workflow."""
    if not report.workflows:
        console.print(
            f"No workflow is deployed in {report.store}. Deploy one with `keep run FILE`."
        )
        return
    for workflow in report.workflows:
        console.print(_panel(workflow))


def _panel(workflow: WorkflowStatus) -> Panel:
    parts: list[Any] = []
    inputs = Table(title="In: events", title_justify="left", expand=True, show_edge=False)
    inputs.add_column("event")
    inputs.add_column("topic", style="dim")
    inputs.add_column("status")
    for item in workflow.inputs:
        inputs.add_row(item.title, item.topic, _status_text(item.status))
    parts.append(inputs if workflow.inputs else Text("In: no events yet", style="dim"))
    outputs = Table(title="Out: changes made", title_justify="left", expand=True, show_edge=False)
    outputs.add_column("change")
    outputs.add_column("status")
    outputs.add_column("result")
    for out in workflow.outputs:
        outputs.add_row(out.title, _status_text(out.status), _short(out.result, out.error))
    parts.append(outputs if workflow.outputs else Text("Out: no changes yet", style="dim"))
    if workflow.waiting:
        waits = Table(title="Waiting", title_justify="left", expand=True, show_edge=False)
        waits.add_column("what")
        waits.add_column("why")
        waits.add_column("to do")
        for wait in workflow.waiting:
            todo = "\n".join(wait.commands) if wait.commands else "nothing: it continues by itself"
            waits.add_row(wait.subject, wait.why, todo, style="bold" if wait.needs_person else None)
        parts.append(waits)
    else:
        parts.append(Text("Nothing waits for you.", style="green"))
    summary = ", ".join(f"{n} {s}" for s, n in sorted(workflow.runs.items())) or "no runs"
    nexts = ", ".join(f"{h} at {t:%H:%M:%S}" for h, t in sorted(workflow.next_runs.items()))
    footer = f"runs: {summary}" + (f"; next: {nexts}" if nexts else "")
    parts.append(Text(footer, style="dim"))
    flags = " [paused]" if workflow.paused else ""
    worker = f" on {workflow.worker}" if workflow.worker else ""
    return Panel(Group(*parts), title=f"{workflow.name} v{workflow.version}{flags}{worker}")


_STYLES = {
    "pending": "yellow",
    "reserved": "cyan",
    "consumed": "green",
    "skipped": "dim",
    "applied": "green",
    "in_flight": "cyan",
    "failed": "red",
    "needs_reconcile": "yellow",
    "indeterminate": "bold red",
    "committed": "green",
    "active": "cyan",
    "crashed": "red",
}


def _status_text(status: str) -> Text:
    style = _STYLES.get(status, "red" if status.startswith("failed") else "yellow")
    return Text(status, style=style)


def _short(result: JsonValue, error: str | None) -> str:
    if error and result is None:
        return error if len(error) <= 80 else error[:77] + "..."
    if isinstance(result, dict):
        return ", ".join(f"{k}={v}" for k, v in result.items())
    return "" if result is None else str(result)


def event_table(events: list[Event]) -> Table:
    """Events for people."""
    table = Table(expand=True)
    for column in ("id", "workflow", "topic", "title", "status", "attempt"):
        table.add_column(column)
    for e in events:
        table.add_row(
            e.id, e.workflow, e.topic, e.title, _status_text(e.status.value), str(e.attempt)
        )
    return table


def run_table(runs: list[RunRecord]) -> Table:
    """Runs for people."""
    table = Table(expand=True)
    for column in ("id", "workflow", "handler", "phase", "status", "detail"):
        table.add_column(column)
    for r in runs:
        detail = r.error or (f"retry of {r.retry_of}" if r.retry_of else "")
        table.add_row(
            r.id,
            f"{r.workflow} v{r.workflow_version}",
            r.handler,
            r.phase.value,
            _status_text(r.status.value),
            detail,
        )
    return table


def ledger_table(entries: list[LedgerEntry]) -> Table:
    """Ledger entries for people."""
    table = Table(expand=True)
    for column in ("id", "run", "change", "operation", "status", "result"):
        table.add_column(column)
    for e in entries:
        table.add_row(
            e.id,
            e.run_id,
            e.ui_title or "",
            f"{e.connector}.{e.operation}",
            _status_text(e.status.value),
            _short(e.result, e.error),
        )
    return table
