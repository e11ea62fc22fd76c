"""``keep run``, ``keep worker``, the inspect commands and a person's actions.

Every command takes ``--store URL`` (default ``sqlite:///.keep/keep.db``);
inspect commands print rich tables for people and JSON with ``--json``.
"""

from __future__ import annotations

import getpass
import json
import os
import signal
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TypeVar

import click
from pydantic import BaseModel, TypeAdapter
from rich.console import Console
from rich.live import Live
from rich.table import Table

from keep_sdk.console import EXIT_PROBLEM, fail, reports_errors
from keep_sdk.errors import NotFound, ScriptRejected
from keep_sdk.model import Event, EventStatus, LedgerEntry, LedgerStatus, RunRecord, RunStatus
from keep_sdk.scheduler._local import ISOLATIONS, Installation, load_seed
from keep_sdk.scheduler._scheduler import DEFAULT_LEASE_TTL_S, Scheduler
from keep_sdk.scheduler._tasks import Activity
from keep_sdk.scheduler._views import (
    StatusReport,
    build_status,
    event_table,
    ledger_table,
    render_status,
    run_table,
)

__all__ = [
    "COMMANDS",
    "events_command",
    "grant_command",
    "ledger_command",
    "pause_command",
    "resolve_command",
    "resume_command",
    "run_command",
    "runs_command",
    "skip_command",
    "status_command",
    "worker_command",
]

F = TypeVar("F", bound=Callable[..., Any])

_FAILED = (RunStatus.FAILED_LOGIC, RunStatus.FAILED_INTERNAL)


def _store_option(func: F) -> F:
    return click.option(
        "--store",
        "store_url",
        metavar="URL",
        default=None,
        help="sqlite:///path/keep.db (default sqlite:///.keep/keep.db), postgresql://…, memory://",
    )(func)


def _doubles_option(func: F) -> F:
    return click.option(
        "--doubles",
        type=click.Path(dir_okay=False, path_type=Path),
        default=None,
        help="SQLite file holding the built-in connectors' data (default: doubles.db next to "
        "a SQLite store; in memory otherwise).",
    )(func)


def _isolation_option(func: F) -> F:
    return click.option(
        "--isolation",
        type=click.Choice(ISOLATIONS),
        default="process",
        show_default=True,
        help="Run each phase in a killable worker process, or in this process.",
    )(func)


def _json_option(func: F) -> F:
    return click.option("--json", "as_json", is_flag=True, help="Print JSON for machines.")(func)


def _actor() -> str:
    try:
        return getpass.getuser()
    except (KeyError, OSError):
        return "cli"


def _print_json(value: Any) -> None:
    if isinstance(value, BaseModel):
        click.echo(value.model_dump_json(indent=2, by_alias=True))
    else:
        click.echo(json.dumps(value, indent=2, default=str))


@contextmanager
def _installation(
    store_url: str | None,
    *,
    doubles: Path | None = None,
    isolation: str = "in-process",
) -> Iterator[Installation]:
    installation = Installation.open(store_url, doubles=doubles, isolation=isolation)
    try:
        yield installation
    finally:
        installation.close()


@contextmanager
def _workflow_lease(installation: Installation, workflow: str, wait_s: float) -> Iterator[None]:
    """Hold the workflow's lease while a person's action drives a run, so no worker runs it
    at the same time."""
    scheduler = Scheduler(installation.runtime, worker=f"cli:{os.getpid()}")
    deadline = time.monotonic() + wait_s
    while scheduler.leases.claim(workflow) is None:
        if time.monotonic() > deadline:
            lease = installation.store.get_lease(workflow)
            owner = lease.owner if lease else "another worker"
            fail(
                f"workflow {workflow!r} is busy on {owner}; try again in a moment "
                "(or stop that worker)"
            )
        time.sleep(0.2)
    try:
        yield
    finally:
        scheduler.close()


# keep run / keep worker


@click.command("run")
@click.argument("file", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@_store_option
@click.option("--until-idle", is_flag=True, help="Stop once nothing is due (instead of forever).")
@click.option(
    "--seed",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    default=None,
    help="JSON/YAML file of data for the built-in connectors: {gmail: {...}, sheets: {...}}.",
)
@click.option(
    "--grant",
    "grants",
    multiple=True,
    metavar="PERMISSION",
    help="Grant a permission (sheets.write) to the workflow before it runs; repeatable.",
)
@click.option("--name", default=None, help="Deploy under this name instead of the script's.")
@_doubles_option
@_isolation_option
@_json_option
@reports_errors
def run_command(
    file: Path,
    store_url: str | None,
    until_idle: bool,
    seed: Path | None,
    grants: tuple[str, ...],
    name: str | None,
    doubles: Path | None,
    isolation: str,
    as_json: bool,
) -> None:
    """Validate FILE, deploy it (a new version when it changed) and run it.

    A script with errors is refused with the validator's diagnostics. Then the
    scheduler runs producers, consumers, retries and reconciliations as they
    fall due: until nothing is due (--until-idle) or until Ctrl-C, with a live
    view. Afterwards `keep status` shows what came in and what went out.
    """
    from keep_sdk.plugins import default_plugins
    from keep_sdk.validator import render_text

    source = file.read_text(encoding="utf-8")
    out = Console(stderr=as_json)
    try:
        workflow = default_plugins().load_workflow(source, filename=str(file))
    except ScriptRejected as exc:
        if exc.report is not None:
            click.echo(render_text(exc.report, source), err=True)
        fail(f"{file} has errors; fix them and run again (nothing was deployed)")
    workflow_name = name or workflow.name
    if not workflow_name:
        fail(f'{file} declares no name; add name: "..." to Keep.workflow({{...}}) or --name')
    with _installation(store_url, doubles=doubles, isolation=isolation) as inst:
        version, deployed = _deploy(inst, source, workflow_name, str(file))
        if seed is not None:
            inst.seed(load_seed(seed))
        for permission in grants:
            inst.store.grant_permission(workflow_name, permission, actor=_actor())
        if not as_json:
            what = (
                f"deployed as version {version}" if deployed else f"unchanged (version {version})"
            )
            out.print(
                f"[bold]{workflow_name}[/bold] {what}; store {inst.store_url}", soft_wrap=True
            )
        scheduler = Scheduler(inst.runtime)
        activities: list[Activity] = []
        if until_idle:
            stop = threading.Event()

            def record(activity: Activity) -> None:
                activities.append(activity)
                if not as_json:
                    out.print(f"  {activity.describe()}", highlight=False, soft_wrap=True)

            scheduler.run_forever(stop=stop, on_activity=record, on_idle=stop.set)
        else:
            activities = _run_live(scheduler, out, quiet=as_json)
        report = build_status(
            inst.store, store_url=inst.store_url, workflow=workflow_name, now=inst.runtime.now()
        )
        failed = [a for a in activities if a.run is not None and a.run.status in _FAILED]
        if as_json:
            _print_json(
                {
                    "workflow": workflow_name,
                    "version": version,
                    "deployed": deployed,
                    "activities": [a.model_dump(mode="json") for a in activities],
                    "status": report.model_dump(mode="json"),
                }
            )
        else:
            render_status(report, out)
    if failed:
        sys.exit(EXIT_PROBLEM)


def _deploy(inst: Installation, source: str, name: str, filename: str) -> tuple[int, bool]:
    try:
        current = inst.store.get_workflow_version(name)
    except NotFound:
        current = None
    if current is not None and current.source == source:
        return current.version, False
    return inst.runtime.deploy(source, name=name, filename=filename), True


def _run_live(scheduler: Scheduler, console: Console, *, quiet: bool) -> list[Activity]:
    activities: list[Activity] = []
    stop = threading.Event()
    previous = signal.signal(signal.SIGTERM, lambda *_: stop.set())

    def table(caption: str) -> Table:
        view = Table(title=f"keep run on {scheduler.worker} — Ctrl-C to stop", expand=True)
        view.add_column("time")
        view.add_column("what happened")
        for item in activities[-15:]:
            view.add_row(f"{item.at:%H:%M:%S}", item.describe())
        view.caption = caption
        return view

    try:
        with Live(
            table("starting"), console=console, refresh_per_second=4, transient=quiet
        ) as live:

            def record(activity: Activity) -> None:
                activities.append(activity)
                live.update(table("working"))

            def idle() -> None:
                upcoming = scheduler.next_due()
                when = f"next due: {upcoming:%Y-%m-%d %H:%M:%S} UTC" if upcoming else "idle"
                live.update(table(when))

            scheduler.run_forever(stop=stop, on_activity=record, on_idle=idle)
    except KeyboardInterrupt:
        pass
    finally:
        signal.signal(signal.SIGTERM, previous)
        scheduler.close()
    return activities


@click.command("worker")
@_store_option
@_doubles_option
@_isolation_option
@click.option(
    "--lease-ttl",
    type=click.FloatRange(min=0.5),
    default=DEFAULT_LEASE_TTL_S,
    show_default=True,
    help="Seconds a workflow stays claimed without a heartbeat (takeover time after a kill).",
)
@click.option("--name", "worker_name", default=None, help="Worker name (default host:pid:…).")
@click.option(
    "--poll",
    type=click.FloatRange(min=0.01),
    default=1.0,
    show_default=True,
    help="Longest sleep between looks at the store.",
)
@click.option("--until-idle", is_flag=True, help="Stop once nothing is due.")
@reports_errors
def worker_command(
    store_url: str | None,
    doubles: Path | None,
    isolation: str,
    lease_ttl: float,
    worker_name: str | None,
    poll: float,
    until_idle: bool,
) -> None:
    """Run the scheduler as a long-lived worker; start several to share a PostgreSQL store.

    Prints one line per thing done. Stops on SIGTERM or Ctrl-C, releasing its leases.
    """
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    with _installation(store_url, doubles=doubles, isolation=isolation) as inst:
        scheduler = Scheduler(inst.runtime, worker=worker_name, lease_ttl_s=lease_ttl)
        click.echo(f"worker {scheduler.worker} on {inst.store_url}", err=True)

        def report(activity: Activity) -> None:
            click.echo(f"{activity.at:%H:%M:%S} {activity.describe()}")

        def idle() -> None:
            if until_idle:
                stop.set()

        def error(exc: Exception) -> None:
            click.echo(
                f"error: {type(exc).__name__}: {exc} (the worker carries on; its leases expire "
                "if this persists)",
                err=True,
            )

        try:
            scheduler.run_forever(
                stop=stop, poll_s=poll, on_activity=report, on_idle=idle, on_error=error
            )
        except KeyboardInterrupt:
            pass
        finally:
            scheduler.close()


# Inspecting


@click.command("status")
@_store_option
@click.option("--workflow", default=None, help="Only this workflow.")
@click.option(
    "--limit",
    type=click.IntRange(min=1),
    default=10,
    show_default=True,
    help="Inputs and outputs listed per workflow.",
)
@_json_option
@reports_errors
def status_command(store_url: str | None, workflow: str | None, limit: int, as_json: bool) -> None:
    """What came in, what went out, and what waits for you (and why)."""
    with _installation(store_url) as inst:
        report: StatusReport = build_status(
            inst.store,
            store_url=inst.store_url,
            workflow=workflow,
            limit=limit,
            now=inst.runtime.now(),
        )
    if as_json:
        _print_json(report)
    else:
        render_status(report, Console())


def _listing(
    name: str,
    help_text: str,
    fetch: Callable[[Installation, str | None, str | None, int | None], list[Any]],
    table: Callable[[list[Any]], Table],
    adapter: TypeAdapter[Any],
    statuses: list[str],
) -> click.Command:
    @click.command(name, help=help_text)
    @_store_option
    @click.option("--workflow", default=None, help="Only this workflow.")
    @click.option("--status", type=click.Choice(statuses), default=None, help="Only this status.")
    @click.option("--limit", type=click.IntRange(min=1), default=None, help="At most this many.")
    @_json_option
    @reports_errors
    def command(
        store_url: str | None,
        workflow: str | None,
        status: str | None,
        limit: int | None,
        as_json: bool,
    ) -> None:
        with _installation(store_url) as inst:
            rows = fetch(inst, workflow, status, limit)
        if as_json:
            click.echo(adapter.dump_json(rows, indent=2, by_alias=True).decode())
        else:
            Console().print(table(rows))

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
    event_table,
    TypeAdapter(list[Event]),
    [s.value for s in EventStatus],
)
runs_command = _listing(
    "runs",
    "Runs in creation order (the most recent with --limit): phase, status and error.",
    _runs,
    run_table,
    TypeAdapter(list[RunRecord]),
    [s.value for s in RunStatus],
)
ledger_command = _listing(
    "ledger",
    "The mutation ledger: every change a run made or tried to make, with its outcome.",
    _ledger,
    ledger_table,
    TypeAdapter(list[LedgerEntry]),
    [s.value for s in LedgerStatus],
)


# A person's actions


@click.command("skip")
@click.argument("event_id")
@_store_option
@click.option("--reason", default=None, help="Recorded in the audit log.")
@_json_option
@reports_errors
def skip_command(store_url: str | None, event_id: str, reason: str | None, as_json: bool) -> None:
    """Never deliver the pending event EVENT_ID (ids: `keep events`)."""
    with _installation(store_url) as inst:
        event = inst.actions.skip_event(event_id, actor=_actor(), reason=reason)
    if as_json:
        _print_json(event)
    else:
        click.echo(f"skipped {event.title!r} ({event.id}); it will not be delivered")


@click.command("resolve")
@click.argument("run_id")
@click.option(
    "--retry",
    "choice",
    flag_value="retry",
    help="Ask again whether the change happened (escalated), or retry a failed run.",
)
@click.option(
    "--didnt-happen",
    "choice",
    flag_value="didnt-happen",
    help="The change did not happen: make it again with the same inputs.",
)
@click.option(
    "--skip",
    "choice",
    flag_value="skip",
    help="Give up on the change: next runs with {status: 'skipped'}.",
)
@_store_option
@_doubles_option
@_isolation_option
@click.option(
    "--wait",
    type=click.FloatRange(min=0),
    default=DEFAULT_LEASE_TTL_S,
    show_default=True,
    help="Seconds to wait for a worker to let go of the workflow.",
)
@_json_option
@reports_errors
def resolve_command(
    run_id: str,
    choice: str | None,
    store_url: str | None,
    doubles: Path | None,
    isolation: str,
    wait: float,
    as_json: bool,
) -> None:
    """Decide about a run that waits for a person (ids: `keep status` or `keep runs`)."""
    if choice is None:
        raise click.UsageError("choose one of --retry, --didnt-happen or --skip")
    with _installation(store_url, doubles=doubles, isolation=isolation) as inst:
        run = inst.store.get_run(run_id)
        actor = _actor()
        with _workflow_lease(inst, run.workflow, wait):
            if choice == "retry" and run.status in (*_FAILED, RunStatus.CRASHED):
                inst.store.record_audit(
                    actor=actor, action="retry", target=run.id, workflow=run.workflow
                )
                ended = inst.runtime.retry(run.id)
            elif choice == "retry":
                ended = inst.actions.try_again(run.id, actor=actor)
            elif choice == "didnt-happen":
                ended = inst.actions.didnt_happen(run.id, actor=actor)
            else:
                ended = inst.actions.skip(run.id, actor=actor)
    if as_json:
        _print_json(ended)
    else:
        click.echo(
            f"run {ended.id} ({ended.handler}) is {ended.status.value} at {ended.phase.value}"
            + (
                f": {ended.error}"
                if ended.error and ended.status is not RunStatus.COMMITTED
                else ""
            )
        )


@click.command("pause")
@click.argument("workflow")
@_store_option
@click.option("--reason", default=None, help="Recorded in the audit log.")
@reports_errors
def pause_command(workflow: str, store_url: str | None, reason: str | None) -> None:
    """Stop new runs of WORKFLOW until `keep resume`."""
    with _installation(store_url) as inst:
        inst.actions.pause(workflow, actor=_actor(), reason=reason)
    click.echo(f"paused {workflow}; runs already waiting stay as they are")


@click.command("resume")
@click.argument("workflow")
@_store_option
@reports_errors
def resume_command(workflow: str, store_url: str | None) -> None:
    """Let WORKFLOW run again after `keep pause`."""
    with _installation(store_url) as inst:
        inst.actions.resume(workflow, actor=_actor())
    click.echo(f"resumed {workflow}")


@click.command("grant")
@click.argument("workflow")
@click.argument("permission")
@_store_option
@_doubles_option
@_isolation_option
@click.option(
    "--wait",
    type=click.FloatRange(min=0),
    default=DEFAULT_LEASE_TTL_S,
    show_default=True,
    help="Seconds to wait for a worker to let go of the workflow.",
)
@reports_errors
def grant_command(
    workflow: str,
    permission: str,
    store_url: str | None,
    doubles: Path | None,
    isolation: str,
    wait: float,
) -> None:
    """Grant PERMISSION (such as sheets.write) to WORKFLOW; runs waiting for it continue."""
    with (
        _installation(store_url, doubles=doubles, isolation=isolation) as inst,
        _workflow_lease(inst, workflow, wait),
    ):
        resumed = inst.actions.grant(workflow, permission, actor=_actor())
    click.echo(f"granted {permission} to {workflow}")
    for run in resumed:
        click.echo(f"  run {run.id} ({run.handler}) is now {run.status.value}")


COMMANDS: tuple[click.Command, ...] = (
    run_command,
    worker_command,
    status_command,
    events_command,
    runs_command,
    ledger_command,
    skip_command,
    resolve_command,
    pause_command,
    resume_command,
    grant_command,
)
"""Every command this package adds to ``keep``."""
