"""``keep status`` and ``keep events|runs|ledger``: text for people, JSON with ``--json``.

They only look: a missing store is an error, and nothing is created (no store, folder or
``doubles.db``)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import click
from pydantic import TypeAdapter
from rich.console import Console

from keep_sdk.app import Installation
from keep_sdk.cli._durable_views import print_run_detail, run_detail
from keep_sdk.cli._options import json_option, opened, store_option
from keep_sdk.cli._trace_view import print_trace
from keep_sdk.cli._views import print_events, print_ledger, print_runs, render_status
from keep_sdk.cli.outputs import StatusOutput
from keep_sdk.cli.support import EXIT_PROBLEM, print_json, reports_errors
from keep_sdk.cli.text import console
from keep_sdk.model import Event, EventStatus, LedgerEntry, LedgerStatus, RunRecord, RunStatus
from keep_sdk.status import StatusReport

__all__ = ["events_command", "ledger_command", "runs_command", "status_command"]


@click.command("status")
@store_option
@click.option("--workflow", default=None, help="Only this workflow.")
@click.option(
    "--limit",
    type=click.IntRange(min=1),
    default=10,
    show_default=True,
    help="Inputs and outputs listed per workflow.",
)
@click.option(
    "--check",
    is_flag=True,
    help="Only say whether work is stalled: exit 1 when work waits and nothing progressed "
    "for --stalled-after seconds.",
)
@click.option(
    "--stalled-after",
    type=click.FloatRange(min=0),
    default=300.0,
    show_default=True,
    help="With --check: seconds without progress after which waiting work counts as stalled.",
)
@json_option
@reports_errors
def status_command(
    store_url: str | None,
    workflow: str | None,
    limit: int,
    check: bool,
    stalled_after: float,
    as_json: bool,
) -> None:
    """What came in, what went out, and what waits for you (and why).

    With --check, one line (or JSON) instead: exit 1 when events wait on a subscribed
    topic or work is due, and neither a run changed nor the oldest of that work arrived
    within --stalled-after seconds (no worker is making progress); exit 0 otherwise.
    """
    if check:
        _check(store_url, stalled_after, as_json)
        return
    with opened(store_url, read_only=True) as inst:
        report: StatusReport = inst.status(workflow=workflow, limit=limit)
    if as_json:
        print_json(StatusOutput.of(report))
    else:
        render_status(report, console())


def _check(store_url: str | None, stalled_after: float, as_json: bool) -> None:
    import datetime as dt
    import sys

    from keep_sdk.telemetry import check_stalled

    with opened(store_url, read_only=True) as inst:
        stall = check_stalled(inst.store, after_s=stalled_after, now=dt.datetime.now(dt.UTC))
    if as_json:
        since = stall.since.isoformat() if stall.since is not None else None
        print_json(
            {
                "stalled": stall.stalled,
                "pending": stall.pending,
                "due": stall.due,
                "since": since,
                "idle_s": stall.idle_s,
            }
        )
    else:
        click.echo(stall.describe())
    if stall.stalled:
        sys.exit(EXIT_PROBLEM)


def _listing(
    name: str,
    help_text: str,
    fetch: Callable[[Installation, str | None, str | None, int | None], list[Any]],
    show: Callable[[list[Any], Console], None],
    adapter: TypeAdapter[Any],
    statuses: list[str],
) -> click.Command:
    @click.command(name, help=help_text)
    @store_option
    @click.option("--workflow", default=None, help="Only this workflow.")
    @click.option("--status", type=click.Choice(statuses), default=None, help="Only this status.")
    @click.option("--limit", type=click.IntRange(min=1), default=None, help="At most this many.")
    @json_option
    @reports_errors
    def command(
        store_url: str | None,
        workflow: str | None,
        status: str | None,
        limit: int | None,
        as_json: bool,
    ) -> None:
        with opened(store_url, read_only=True) as inst:
            rows = fetch(inst, workflow, status, limit)
        if as_json:
            click.echo(adapter.dump_json(rows, indent=2, by_alias=True).decode())
        else:
            show(rows, console())

    return command


def _events(
    inst: Installation, workflow: str | None, status: str | None, limit: int | None
) -> list[Event]:
    names = [workflow] if workflow else [w.name for w in inst.store.list_workflows()]
    chosen = EventStatus(status) if status else None
    rows = [e for n in names for e in inst.store.list_events(n, status=chosen)]
    return rows[-limit:] if limit else rows


def _runs(
    inst: Installation, workflow: str | None, status: str | None, limit: int | None
) -> list[RunRecord]:
    rows = inst.store.list_runs(workflow=workflow, status=RunStatus(status) if status else None)
    return rows[-limit:] if limit else rows


def _ledger(
    inst: Installation, workflow: str | None, status: str | None, limit: int | None
) -> list[LedgerEntry]:
    rows = inst.store.list_ledger(
        workflow=workflow, status=LedgerStatus(status) if status else None
    )
    return rows[-limit:] if limit else rows


events_command = _listing(
    "events",
    "Events in publish order (the most recent with --limit), by title and status.",
    _events,
    print_events,
    TypeAdapter(list[Event]),
    [s.value for s in EventStatus],
)
_RUNS = TypeAdapter(list[RunRecord])


@click.command("runs")
@click.argument("run_id", metavar="[RUN]", required=False)
@store_option
@click.option("--workflow", default=None, help="Only this workflow.")
@click.option(
    "--status",
    type=click.Choice([s.value for s in RunStatus]),
    default=None,
    help="Only this status.",
)
@click.option("--limit", type=click.IntRange(min=1), default=None, help="At most this many.")
@click.option("--trace", "with_trace", is_flag=True, help="Show each phase's calls (the trace).")
@json_option
@reports_errors
def runs_command(
    run_id: str | None,
    store_url: str | None,
    workflow: str | None,
    status: str | None,
    limit: int | None,
    with_trace: bool,
    as_json: bool,
) -> None:
    """Runs in creation order (the most recent with --limit): phase, status and error.

    With RUN: that run, its durable operation and every attempt (append-only). With
    --trace, the calls each phase made (operation, arguments, result or classified
    error, duration); --json includes the trace only with --trace.
    """
    if run_id is not None and not with_trace:
        with opened(store_url, read_only=True) as inst:
            detail = run_detail(inst.store, run_id)
        if as_json:
            print_json(detail)
        else:
            print_run_detail(detail, console())
        return
    with opened(store_url, read_only=True) as inst:
        rows = [inst.store.get_run(run_id)] if run_id else _runs(inst, workflow, status, limit)
    if as_json:
        exclude = None if with_trace else {"__all__": {"trace"}}
        click.echo(_RUNS.dump_json(rows, indent=2, by_alias=True, exclude=exclude).decode())
    elif with_trace:
        out = console()
        for run in rows:
            print_trace(run, out)
    else:
        print_runs(rows, console())


ledger_command = _listing(
    "ledger",
    "The mutation ledger: every change a run made or tried to make, with its outcome.",
    _ledger,
    print_ledger,
    TypeAdapter(list[LedgerEntry]),
    [s.value for s in LedgerStatus],
)
