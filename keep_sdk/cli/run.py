"""``keep run FILE`` (validate, deploy, schedule) and ``keep worker`` (a long-lived scheduler)."""

from __future__ import annotations

import datetime as dt
import signal
import sys
import threading
from collections.abc import Callable
from contextlib import AbstractContextManager, ExitStack, suppress
from pathlib import Path
from typing import TYPE_CHECKING, NoReturn

import click
from rich.console import Console
from rich.live import Live
from rich.table import Table
from rich.text import Text

from keep_sdk.app import load_seed
from keep_sdk.cli._deploy import deploy_script, validated
from keep_sdk.cli._observing import observability_options, watching
from keep_sdk.cli._options import (
    doubles_option,
    isolation_option,
    json_option,
    opened,
    store_option,
)
from keep_sdk.cli._supervisor import Supervisor, child_arguments, stop_when_stdin_closes
from keep_sdk.cli._views import at, render_status
from keep_sdk.cli.outputs import RunOutput, StatusOutput
from keep_sdk.cli.support import (
    EXIT_PROBLEM,
    EXIT_USAGE,
    check_permissions,
    fail,
    print_json,
    read_text,
    reports_errors,
)
from keep_sdk.cli.text import console, line, shown, styled
from keep_sdk.errors import ConfigurationError, StoreUnavailable
from keep_sdk.model import LedgerStatus, RunStatus
from keep_sdk.scheduler import (
    DEFAULT_LEASE_TTL_S,
    WORKER_RETRY,
    Activity,
    Outage,
    Scheduler,
    is_transient,
)
from keep_sdk.stores import redacted_url

if TYPE_CHECKING:
    from keep_sdk.app import Installation

__all__ = ["EXIT_WAITING", "run_command", "worker_command"]

_FAILED = (RunStatus.FAILED_LOGIC, RunStatus.FAILED_INTERNAL)
EXIT_WAITING = 3
"""``keep run --until-idle``: nothing failed, but work waits on a fault that nobody has been
asked about yet (a run paused transient, a mutation still being reconciled by itself): try
again later, or look at ``keep status``. A run escalated to a person, like one waiting for
an approval, is an answer (exit 0): ``keep status`` says what it waits for."""


@click.command("run")
@click.argument("file", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@store_option
@click.option("--until-idle", is_flag=True, help="Stop once nothing is due (instead of forever).")
@click.option(
    "--seed",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    default=None,
    help="JSON/YAML file of data for the built-in connectors: {gmail: {...}, sheets: {...}}.",
)
@click.option(
    "--seed-replace",
    is_flag=True,
    help="Replace each connector's top-level keys with the seed's instead of merging.",
)
@click.option(
    "--grant",
    "grants",
    multiple=True,
    metavar="PERMISSION",
    help="Grant a permission (sheets.write) to the workflow before it runs; repeatable.",
)
@click.option("--name", default=None, help="Deploy under this name instead of the script's.")
@doubles_option
@isolation_option
@json_option
@reports_errors
def run_command(
    file: Path,
    store_url: str | None,
    until_idle: bool,
    seed: Path | None,
    seed_replace: bool,
    grants: tuple[str, ...],
    name: str | None,
    doubles: Path | None,
    isolation: str,
    as_json: bool,
) -> None:
    """Validate FILE, deploy it (a new version when it changed) and run it.

    A script with errors, a seed file of the wrong shape or a permission no
    connector declares is refused before anything is deployed. Then the
    scheduler runs producers, consumers, retries and reconciliations as they
    fall due: until nothing is due (--until-idle) or until Ctrl-C, with a live
    view. Afterwards `keep status` shows what came in and what went out.
    """
    source = read_text(file)
    out = console(stderr=as_json)
    checked = validated(file, source, store_url, name)
    workflow_name = name or checked.workflow.manifest.name
    if not workflow_name:
        fail(f'{file} declares no name; add name: "..." to Keep.workflow({{...}}) or --name')
    with opened(store_url, doubles=doubles, isolation=isolation) as inst:
        check_permissions(inst, grants, param_hint="--grant")
        document = None
        if seed is not None:
            try:
                document = load_seed(seed)
                inst.check_seed(document, source=str(seed))
            except ConfigurationError as exc:
                fail(f"{exc} (nothing was deployed)", code=EXIT_USAGE)
        version, deployed = deploy_script(inst, checked, workflow_name, grants)
        if document is not None:
            inst.seed(document, replace=seed_replace, source=str(seed))
        if not as_json:
            what = (
                f"deployed as version {version}" if deployed else f"unchanged (version {version})"
            )
            store = redacted_url(inst.store_url)
            out.print(
                line(styled(workflow_name, "bold"), f" {what}; store {store}"),
                soft_wrap=True,
            )
        scheduler = inst.scheduler()
        activities: list[Activity] = []
        if until_idle:
            stop = threading.Event()

            def record(activity: Activity) -> None:
                activities.append(activity)
                if not as_json:
                    out.print(line("  ", activity.describe()), soft_wrap=True)

            scheduler.run_forever(stop=stop, on_activity=record, on_idle=stop.set)
        else:
            activities = _run_live(scheduler, out, quiet=as_json)
        report = inst.status(workflow=workflow_name)
        failed = [a for a in activities if a.run is not None and a.run.status in _FAILED]
        faulted = until_idle and _waits_on_a_fault(inst, workflow_name)
        if as_json:
            print_json(
                RunOutput(
                    workflow=workflow_name,
                    version=version,
                    deployed=deployed,
                    activities=activities,
                    status=StatusOutput.of(report),
                )
            )
        else:
            render_status(report, out)
    if failed:
        sys.exit(EXIT_PROBLEM)
    if faulted:
        click.echo(
            f"{workflow_name}: work waits on a fault (a run paused:transient, or a mutation "
            "still being reconciled); see keep status",
            err=True,
        )
        sys.exit(EXIT_WAITING)


def _waits_on_a_fault(inst: Installation, workflow: str) -> bool:
    """A run of `workflow` paused transient, or a mutation of it still reconciled by the
    runtime itself (not yet escalated to a person)."""
    store = inst.store
    if store.list_runs(workflow=workflow, status=RunStatus.PAUSED_TRANSIENT, limit=1):
        return True
    return bool(store.list_ledger(workflow=workflow, status=LedgerStatus.NEEDS_RECONCILE))


def _run_live(scheduler: Scheduler, console: Console, *, quiet: bool) -> list[Activity]:
    activities: list[Activity] = []
    stop = threading.Event()
    previous = signal.signal(signal.SIGTERM, lambda *_: stop.set())

    def table(caption: str) -> Table:
        view = Table(title=f"keep run on {scheduler.worker} — Ctrl-C to stop", expand=True)
        view.add_column("time")
        view.add_column("what happened")
        for item in activities[-15:]:
            view.add_row(at(item.at), Text(item.describe()))
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
                when = f"next due: {at(upcoming)}" if upcoming else "idle"
                live.update(table(when))

            scheduler.run_forever(stop=stop, on_activity=record, on_idle=idle)
    except KeyboardInterrupt:
        pass
    finally:
        signal.signal(signal.SIGTERM, previous)
        scheduler.close()
    return activities


@click.command("worker")
@store_option
@doubles_option
@isolation_option
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
@click.option(
    "--concurrency",
    type=click.IntRange(min=1),
    default=1,
    show_default=True,
    help="Workflows run at once, each on a thread of its own (never two runs of one "
    "workflow); on SQLite their checkpoints share commits.",
)
@click.option(
    "--processes",
    type=click.IntRange(min=1),
    default=1,
    show_default=True,
    help="Worker processes sharing the store by leases, started, restarted and stopped "
    "together (each with --concurrency lanes): one core each.",
)
@click.option("--supervised", type=int, default=None, hidden=True)
@observability_options
@click.pass_context
@reports_errors
def worker_command(
    ctx: click.Context,
    store_url: str | None,
    doubles: Path | None,
    isolation: str,
    lease_ttl: float,
    worker_name: str | None,
    poll: float,
    until_idle: bool,
    concurrency: int,
    processes: int,
    supervised: int | None,
    metrics_port: int | None,
    metrics_host: str,
    healthy_within: float,
    otel: bool,
) -> None:
    """Run the scheduler as a long-lived worker; start several to share a PostgreSQL store.

    Prints one line per thing done. A store that cannot be reached (not started yet,
    restarting, connections terminated) is waited for: one line when the outage
    begins, one when the store answers again. Stops on SIGTERM or Ctrl-C (exit 0),
    releasing its leases, or on a store it can never use: a configuration error, a
    refused login, a missing database or a newer schema (exit 1, one message).
    With --metrics-port, serves Prometheus /metrics and /healthz; with --otel, exports one
    OpenTelemetry trace per run. With --processes N, runs N such workers on the store
    (restarted when a signal ends one) and stops them all together.
    """
    if processes > 1 and supervised is None:
        _supervise(ctx, processes, store_url, doubles, worker_name, metrics_port)
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    signal.signal(signal.SIGINT, lambda *_: stop.set())
    if supervised is not None:
        stop_when_stdin_closes(stop)
    mark = f"[{supervised}] " if supervised is not None else ""

    def outage(exc: Exception) -> None:
        reason = exc.reason if isinstance(exc, StoreUnavailable) and exc.reason else str(exc)
        click.echo(
            f"{at(dt.datetime.now(dt.UTC))} store unavailable: {' '.join(reason.split())} "
            "(the worker waits and retries until it answers)",
            err=True,
        )

    def recovery(lasted_s: float) -> None:
        click.echo(
            f"{at(dt.datetime.now(dt.UTC))} store available again after {lasted_s:.1f} s; "
            "the worker carries on",
            err=True,
        )

    with ExitStack() as stack:
        inst = _open_when_available(
            stack,
            lambda: opened(store_url, doubles=doubles, isolation=isolation),
            stop,
            outage,
            recovery,
        )
        if inst is None:
            return
        watch = stack.enter_context(
            watching(
                inst,
                metrics_port=metrics_port,
                metrics_host=metrics_host,
                healthy_within=healthy_within,
                otel=otel,
            )
        )
        scheduler = inst.scheduler(
            worker=worker_name, lease_ttl_s=lease_ttl, concurrency=concurrency
        )
        stack.callback(scheduler.close)
        lanes = f", {concurrency} workflows at once" if concurrency > 1 else ""
        click.echo(
            f"{mark}worker {scheduler.worker} on {redacted_url(inst.store_url)}{lanes}", err=True
        )

        def report(activity: Activity) -> None:
            watch.progressed()
            click.echo(f"{at(activity.at)} {mark}{shown(activity.describe())}")

        def idle() -> None:
            watch.progressed()
            if until_idle:
                stop.set()

        def error(exc: Exception) -> None:
            watch.store_error()
            click.echo(
                f"error: {type(exc).__name__}: {exc} (the worker carries on; its leases expire "
                "if this persists)",
                err=True,
            )

        with suppress(KeyboardInterrupt):
            scheduler.run_forever(
                stop=stop,
                poll_s=poll,
                on_activity=report,
                on_idle=idle,
                on_error=error,
                on_outage=outage,
                on_recovery=recovery,
                watcher=watch,
            )


def _supervise(
    ctx: click.Context,
    processes: int,
    store_url: str | None,
    doubles: Path | None,
    worker_name: str | None,
    metrics_port: int | None,
) -> NoReturn:
    """Run `processes` copies of this ``keep worker`` (`Supervisor`) and exit with its code.

    The store is opened here once first, so that a store no worker can use is one
    message (and its schema is created by one process, not raced for by all); a store
    that is not reachable yet is left for the workers to wait for. ``memory://`` is
    refused: each process would have a store of its own."""
    try:
        with opened(store_url, doubles=doubles, isolation="in-process") as inst:
            url = inst.store_url
    except Exception as exc:
        if not is_transient(exc):
            raise
    else:
        if url.startswith("memory:"):
            fail(
                f"--processes {processes} needs a store the processes share: {url} lives in "
                "one process; use a SQLite file or PostgreSQL (--store)",
                code=EXIT_USAGE,
            )

    def command(index: int) -> list[str]:
        overrides: dict[str, object] = {"supervised": index}
        if worker_name is not None:
            overrides["worker_name"] = f"{worker_name}-{index}"
        if metrics_port:
            overrides["metrics_port"] = metrics_port + index - 1
        return child_arguments(ctx, overrides, drop=("processes",))

    def say(message: str) -> None:
        click.echo(f"{at(dt.datetime.now(dt.UTC))} {message}", err=True)

    supervisor = Supervisor(command, processes, say)
    say(f"starting {processes} worker processes")
    sys.exit(supervisor.run())


def _open_when_available(
    stack: ExitStack,
    opener: Callable[[], AbstractContextManager[Installation]],
    stop: threading.Event,
    on_outage: Callable[[Exception], None],
    on_recovery: Callable[[float], None],
) -> Installation | None:
    """The installation `opener` opens, retried (`WORKER_RETRY`) while its store is not
    reachable yet; None when `stop` was set first. A non-transient error is raised."""
    outage = Outage(WORKER_RETRY)
    while not stop.is_set():
        try:
            inst = stack.enter_context(opener())
        except Exception as exc:
            if not is_transient(exc):
                raise
            began, pause = outage.failed()
            if began:
                on_outage(exc)
            stop.wait(pause)
            continue
        lasted = outage.ended()
        if lasted is not None:
            on_recovery(lasted)
        return inst
    return None
