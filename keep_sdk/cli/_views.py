"""Renderings for people: ``keep status`` and the events, runs and ledger listings.

Each takes contract models (a `StatusReport`, `Event`, `RunRecord`,
`LedgerEntry`) and only formats them; what they contain is decided below the
command line (``keep_sdk.status.build_status``, the store). What a person can do
(`Remedy`) is spelled as a ``keep`` command here (`keep_sdk.cli.remedies`).

Contracts: every string that comes from a script, an event or the store is
rendered as literal `Text` (markup in it is shown, never interpreted); ids and
suggested commands are printed whole, one record per block of lines rather
than in table cells that would cut them at 80 columns; times carry their date
and ``UTC``.
"""

from __future__ import annotations

import datetime as dt

from pydantic import JsonValue
from rich.console import Console
from rich.text import Text

from keep_sdk.cli.remedies import command
from keep_sdk.cli.text import line, styled
from keep_sdk.model import Event, LedgerEntry, RunRecord
from keep_sdk.runtime import ledger_decision, run_resolution
from keep_sdk.status import StatusReport, WorkflowStatus

__all__ = ["at", "print_events", "print_ledger", "print_runs", "render_status"]


def at(when: dt.datetime) -> str:
    """A time for people: date, time and zone (``2026-11-23 12:00:00 UTC``)."""
    return f"{when.astimezone(dt.UTC):%Y-%m-%d %H:%M:%S} UTC"


def _out(console: Console, text: Text) -> None:
    console.print(text, soft_wrap=True)


def render_status(report: StatusReport, console: Console) -> None:
    """Print the report for people: one section per workflow."""
    if not report.workflows:
        _out(
            console,
            line(
                "No workflow is deployed in ",
                styled(report.store),
                ". Deploy one with `keep run FILE`.",
            ),
        )
        return
    for workflow in report.workflows:
        _section(workflow, report.store, console)


def _section(workflow: WorkflowStatus, store_url: str, console: Console) -> None:
    flags = " [paused]" if workflow.paused else ""
    worker = f" on {workflow.worker}" if workflow.worker else ""
    _out(console, styled(f"{workflow.name} v{workflow.version}{flags}{worker}", "bold"))
    if workflow.inputs:
        _out(console, styled("  In: events", "bold"))
        for item in workflow.inputs:
            _out(
                console,
                line("    ", _status_text(item.status), "  ", styled(item.title), "  ")
                + styled(f"({item.topic}, {item.event_id})", "dim"),
            )
    else:
        _out(console, styled("  In: no events yet", "dim"))
    if workflow.outputs:
        _out(console, styled("  Out: changes made", "bold"))
        for out in workflow.outputs:
            result = out.decision or _short(out.result, out.error)
            _out(
                console,
                line("    ", _status_text(out.status), "  ", styled(out.title))
                + (styled(f" → {result}") if result else Text()),
            )
    else:
        _out(console, styled("  Out: no changes yet", "dim"))
    if workflow.waiting:
        _out(console, styled("  Waiting", "bold"))
        for wait in workflow.waiting:
            _out(
                console,
                line("    ", styled(wait.subject, "bold" if wait.needs_person else ""))
                + styled(f": {wait.why}"),
            )
            if not wait.remedies:
                _out(console, styled("      nothing to do: it continues by itself", "dim"))
            for remedy in wait.remedies:
                _out(console, line("      ", styled(command(remedy, store_url=store_url), "cyan")))
    else:
        _out(console, styled("  Nothing waits for you.", "green"))
    summary = ", ".join(f"{n} {s}" for s, n in sorted(workflow.runs.items())) or "no runs"
    nexts = ", ".join(f"{h} at {at(t)}" for h, t in sorted(workflow.next_runs.items()))
    _out(console, styled(f"  runs: {summary}" + (f"; next: {nexts}" if nexts else ""), "dim"))


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
    "resolved": "dim",
}


def _status_text(status: str) -> Text:
    style = _STYLES.get(status, "red" if status.startswith("failed") else "yellow")
    return Text(status, style=style)


def _short(result: JsonValue, error: str | None) -> str:
    if error and result is None:
        return error
    if isinstance(result, dict):
        return ", ".join(f"{k}={v}" for k, v in result.items())
    return "" if result is None else str(result)


def print_events(events: list[Event], console: Console) -> None:
    """Events for people: the full id, status and title, then topic and attempts."""
    for e in events:
        _out(console, line(styled(e.id, "bold"), "  ", _status_text(e.status.value)))
        _out(console, line("  ", styled(e.title)))
        _out(
            console,
            styled(f"  {e.workflow} · {e.topic} · attempt {e.attempt} · {at(e.created_at)}", "dim"),
        )


def print_runs(runs: list[RunRecord], console: Console) -> None:
    """Runs for people: the full id and status, then workflow, handler and phase, and why.

    A run a person's decision replaced by a retry run says so instead of only
    ``failed:internal``."""
    retried = {r.retry_of: r.id for r in runs if r.retry_of}
    for r in runs:
        replaced = retried.get(r.id)
        status = _status_text(r.status.value)
        if replaced and run_resolution(r) is not None:
            status = _status_text("resolved")
        _out(console, line(styled(r.id, "bold"), "  ", status))
        _out(
            console,
            styled(
                f"  {r.workflow} v{r.workflow_version} · {r.handler} · {r.phase.value} · "
                f"{at(r.created_at)}",
                "dim",
            ),
        )
        if r.error:
            _out(console, line("  ", styled(r.error)))
        if r.retry_of:
            _out(console, styled(f"  retry of {r.retry_of}", "dim"))
        if replaced:
            _out(console, styled(f"  retried as {replaced}", "dim"))


def print_ledger(entries: list[LedgerEntry], console: Console) -> None:
    """Ledger entries for people: the full id and status, the change, its run and outcome;
    after a person's decision, what was decided rather than the escalation's message."""
    for e in entries:
        decision = ledger_decision(e)
        status = "skipped" if decision and e.status.value == "indeterminate" else e.status.value
        _out(console, line(styled(e.id, "bold"), "  ", _status_text(status)))
        _out(console, line("  ", styled(e.ui_title or f"ctx.{e.connector}.{e.operation}")))
        _out(
            console,
            styled(f"  {e.connector}.{e.operation} · run {e.run_id} · {at(e.updated_at)}", "dim"),
        )
        outcome = decision or _short(e.result, e.error)
        if outcome:
            _out(console, line("  → ", styled(outcome)))
