"""Rich renderings for people: ``keep status`` panels and the events, runs and ledger tables.

Each takes contract models (a `StatusReport`, `Event`, `RunRecord`,
`LedgerEntry`) and only formats them; what they contain is decided below the
command line (``keep_sdk.scheduler.build_status``, the store).
"""

from __future__ import annotations

from typing import Any

from pydantic import JsonValue
from rich.console import Console, Group
from rich.panel import Panel
from rich.table import Table
from rich.text import Text

from keep_sdk.model import Event, LedgerEntry, RunRecord
from keep_sdk.scheduler import StatusReport, WorkflowStatus

__all__ = ["event_table", "ledger_table", "render_status", "run_table"]


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
