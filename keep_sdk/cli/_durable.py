"""``keep notify`` and ``keep cancel``: deliver a durable operation's result, cancel a wait.

``notify`` records the result in the store's inbox first (at-least-once: a repeat
is recorded as a duplicate and changes nothing), then, holding the workflow's
lease, continues the parked run to its commit in this process. When a worker
holds the workflow, the worker delivers it instead. Recording needs only the store
(`keep_sdk.cli._options.stored`), so a notification for an unknown, completed or
cancelled operation is answered without importing the runtime; the runtime is built
only to continue a parked run.
"""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import click
from pydantic import JsonValue

from keep_sdk.cli._options import (
    cli_worker,
    doubles_option,
    isolation_option,
    json_option,
    opened,
    store_option,
    stored,
    wait_option,
)
from keep_sdk.cli.support import EXIT_PROBLEM, actor, fail, print_json, read_text, reports_errors
from keep_sdk.contract.admission import notification_result
from keep_sdk.contract.durable import NotificationOutcome, check_correlation_key, parse_duration
from keep_sdk.errors import InvalidArguments
from keep_sdk.model import HostPolicy, RunRecord, RunStatus

__all__ = ["cancel_command", "notify_command", "wait_command"]


def _result_text(value: str) -> tuple[str, str]:
    """The --result text (given, or read from ``@FILE``) and how to name it in errors."""
    if value.startswith("@"):
        return read_text(Path(value[1:])), f"--result {value}"
    return value, "--result"


def _result(text: str, where: str, policy: HostPolicy) -> JsonValue:
    """`text` as a result that may enter a run (`notification_result`); exit 2 otherwise."""
    try:
        return notification_result(text, policy)
    except InvalidArguments as exc:
        raise click.BadParameter(
            f"{exc.message}; give JSON text or @FILE with JSON in it", param_hint=where
        ) from None


def _ended(run: RunRecord) -> str:
    detail = f": {run.error}" if run.error and run.status is not RunStatus.COMMITTED else ""
    return f"run {run.id} ({run.handler}) is {run.status.value} at {run.phase.value}{detail}"


@click.command("notify")
@click.argument("correlation_key")
@click.option(
    "--result",
    "result_text",
    required=True,
    help="The operation's result: JSON text, or @FILE to read JSON from a file.",
)
@store_option
@doubles_option
@isolation_option
@wait_option
@json_option
@reports_errors
def notify_command(
    correlation_key: str,
    result_text: str,
    store_url: str | None,
    doubles: Path | None,
    isolation: str,
    wait: float | None,
    as_json: bool,
) -> None:
    """Deliver the result of a durable operation by its CORRELATION_KEY (`keep status` shows it).

    Exit 2 for a malformed key or a result that cannot enter the run (not JSON, a
    non-finite number, a lone surrogate, too large or too deep; nothing is written);
    exit 1 for an unknown key, or for a key whose operation already completed or
    was cancelled (the delivery is recorded and changes nothing).
    """
    try:
        check_correlation_key(correlation_key)
    except InvalidArguments as exc:
        raise click.BadParameter(str(exc), param_hint="CORRELATION_KEY") from None
    text, where = _result_text(result_text)
    with stored(store_url) as store:
        result = _result(text, where, store.policy)
        recorded = store.notify(correlation_key, result, source=f"cli:{actor()}")
        run = None
        if recorded.outcome is NotificationOutcome.PENDING:
            with store.installation(doubles=doubles, isolation=isolation) as inst:
                receipt = inst.deliver(recorded, worker=cli_worker(), wait_s=wait)
            recorded, run = receipt.notification, receipt.run
    if as_json:
        print_json(
            {
                "notification": recorded.model_dump(mode="json", by_alias=True),
                "run": run.model_dump(mode="json", by_alias=True) if run else None,
            }
        )
    if recorded.outcome in (NotificationOutcome.DUPLICATE, NotificationOutcome.IGNORED):
        fail(
            f"recorded notification {recorded.id} as {recorded.outcome.value}: {recorded.detail}",
            code=EXIT_PROBLEM,
        )
    if as_json:
        return
    if run is not None and recorded.outcome is NotificationOutcome.APPLIED:
        click.echo(f"delivered; {_ended(run)}")
    else:
        click.echo(
            f"recorded notification {recorded.id}; the run is not parked yet or its workflow is "
            "busy, so a worker (`keep worker`) delivers it"
        )


@click.command("cancel")
@click.argument("run_id")
@click.option("--reason", default=None, help="Recorded in the audit log.")
@store_option
@doubles_option
@isolation_option
@wait_option
@json_option
@reports_errors
def cancel_command(
    run_id: str,
    reason: str | None,
    store_url: str | None,
    doubles: Path | None,
    isolation: str,
    wait: float | None,
    as_json: bool,
) -> None:
    """Cancel the durable operation RUN_ID waits for; `next` sees {status: "skipped"}.

    The external work is cancelled best-effort; a later notification for it is
    recorded and changes nothing.
    """
    with opened(store_url, doubles=doubles, isolation=isolation, must_exist=True) as inst:
        run = inst.store.get_run(run_id)
        with inst.holding(run.workflow, worker=cli_worker(), wait_s=wait):
            ended = inst.actions.cancel(run.id, actor=actor(), reason=reason)
    if as_json:
        print_json(ended)
    else:
        click.echo(f"cancelled; {_ended(ended)}")


@click.command("wait")
@click.argument("run_id")
@click.option(
    "--extend",
    "extend_by",
    default=None,
    help="Add this to the current deadline (ISO 8601 duration, P7D).",
)
@click.option(
    "--until",
    "until_text",
    default=None,
    help="Set the deadline to this time (ISO 8601 with a UTC offset, 2026-12-01T09:00:00Z).",
)
@click.option("--start-again", is_flag=True, help="Start the external work once more and wait.")
@click.option("--supply", default=None, help="Give the result by hand: JSON or @FILE.")
@click.option("--skip", is_flag=True, help="Stop waiting: next runs with {status: 'skipped'}.")
@store_option
@doubles_option
@isolation_option
@wait_option
@json_option
@reports_errors
def wait_command(
    run_id: str,
    extend_by: str | None,
    until_text: str | None,
    start_again: bool,
    supply: str | None,
    skip: bool,
    store_url: str | None,
    doubles: Path | None,
    isolation: str,
    wait: float | None,
    as_json: bool,
) -> None:
    """Decide about a run that waits for a durable operation (one that timed out, say).

    Exactly one of --extend, --until, --start-again, --supply and --skip (exit 2
    otherwise). --extend adds to the current deadline (or to now, when it has passed);
    --until sets it.
    """
    chosen = [
        name
        for name, given in (
            ("extend", extend_by is not None),
            ("until", until_text is not None),
            ("start-again", start_again),
            ("supply", supply is not None),
            ("skip", skip),
        )
        if given
    ]
    if len(chosen) != 1:
        raise click.UsageError(
            "choose exactly one of --extend, --until, --start-again, --supply, --skip"
        )
    delta = None
    if extend_by is not None:
        try:
            delta = parse_duration(extend_by)
        except InvalidArguments as exc:
            raise click.BadParameter(str(exc), param_hint="--extend") from None
    until = _deadline(until_text) if until_text is not None else None
    with opened(store_url, doubles=doubles, isolation=isolation, must_exist=True) as inst:
        supplied = (
            _result(*_result_text(supply), inst.runtime.policy) if supply is not None else None
        )
        run = inst.store.get_run(run_id)
        actions, who = inst.actions, actor()
        with inst.holding(run.workflow, worker=cli_worker(), wait_s=wait):
            if delta is not None:
                ended = actions.extend_by(run.id, by=delta, actor=who)
            elif until is not None:
                ended = actions.extend(run.id, until=until, actor=who)
            elif start_again:
                ended = actions.start_again(run.id, actor=who)
            elif supply is not None:
                ended = actions.supply_result(run.id, supplied, actor=who)
            else:
                ended = actions.skip_wait(run.id, actor=who)
    if as_json:
        print_json(ended)
    else:
        click.echo(_ended(ended))


def _deadline(text: str) -> dt.datetime:
    """`--until`: an ISO 8601 time with its UTC offset (``Z`` or ``+01:00``)."""
    try:
        when = dt.datetime.fromisoformat(text)
    except ValueError:
        raise click.BadParameter(
            f"{text!r} is not an ISO 8601 time; write it like 2026-12-01T09:00:00Z",
            param_hint="--until",
        ) from None
    if when.tzinfo is None:
        raise click.BadParameter(
            f"{text!r} has no UTC offset; add Z or +HH:MM (2026-12-01T09:00:00Z)",
            param_hint="--until",
        )
    return when.astimezone(dt.UTC)
