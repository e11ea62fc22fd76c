"""A person's actions: ``keep skip``, ``keep resolve``, ``keep pause|resume``, ``keep grant``.

Each calls `keep_sdk.runtime.PersonActions`, which audits it under the login
name. ``resolve`` and ``grant`` continue runs in this process, so they hold
the workflow's lease meanwhile (`Installation.holding`).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import click
from pydantic import JsonValue

from keep_sdk.cli._options import (
    cli_worker,
    doubles_option,
    isolation_option,
    json_option,
    opened,
    store_option,
    wait_option,
)
from keep_sdk.cli.outputs import WorkflowOutput
from keep_sdk.cli.support import (
    actor,
    check_permissions,
    print_json,
    read_text,
    reports_errors,
)
from keep_sdk.model import RunStatus

__all__ = [
    "grant_command",
    "pause_command",
    "resolve_command",
    "resume_command",
    "revoke_command",
    "skip_command",
]

F = TypeVar("F", bound=Callable[..., Any])


@click.command("skip")
@click.argument("event_id")
@store_option
@click.option("--reason", default=None, help="Recorded in the audit log.")
@json_option
@reports_errors
def skip_command(store_url: str | None, event_id: str, reason: str | None, as_json: bool) -> None:
    """Never deliver the pending event EVENT_ID (ids: `keep events`)."""
    with opened(store_url, must_exist=True) as inst:
        event = inst.actions.skip_event(event_id, actor=actor(), reason=reason)
    if as_json:
        print_json(event)
    else:
        click.echo(f"skipped {event.title!r} ({event.id}); it will not be delivered")


@click.command("resolve")
@click.argument("run_id")
@click.option(
    "--retry",
    is_flag=True,
    help="Ask again whether the change happened (escalated), or retry a failed run.",
)
@click.option(
    "--didnt-happen",
    is_flag=True,
    help="The change did not happen: make it again with the same inputs.",
)
@click.option(
    "--skip",
    is_flag=True,
    help="Give up on the change: next runs with {status: 'skipped'}.",
)
@click.option(
    "--happened",
    is_flag=True,
    help="The change happened: next runs with {status: 'applied', result} (needs --result).",
)
@click.option(
    "--result",
    "result_text",
    default=None,
    help="With --happened: what the service returned, as JSON or @FILE.",
)
@store_option
@doubles_option
@isolation_option
@wait_option
@json_option
@reports_errors
def resolve_command(
    run_id: str,
    retry: bool,
    didnt_happen: bool,
    skip: bool,
    happened: bool,
    result_text: str | None,
    store_url: str | None,
    doubles: Path | None,
    isolation: str,
    wait: float | None,
    as_json: bool,
) -> None:
    """Decide about a run that waits for a person (ids: `keep status` or `keep runs`).

    Exactly one of --retry, --happened (with --result JSON), --didnt-happen and --skip;
    giving two is refused (exit 2) before anything is read or written.
    """
    chosen = [
        name
        for name, given in (
            ("retry", retry),
            ("happened", happened),
            ("didnt-happen", didnt_happen),
            ("skip", skip),
        )
        if given
    ]
    choices = "--retry, --happened --result JSON, --didnt-happen or --skip"
    if len(chosen) != 1:
        given = " and ".join(f"--{c}" for c in chosen)
        raise click.UsageError(
            f"{given} exclude each other; choose one of {choices}"
            if chosen
            else f"choose one of {choices}"
        )
    if happened != (result_text is not None):
        raise click.UsageError(
            "--happened needs --result JSON (what the service returned; null for nothing)"
            if happened
            else "--result goes with --happened"
        )
    [choice] = chosen
    result = _result_json(result_text) if result_text is not None else None
    with opened(store_url, doubles=doubles, isolation=isolation, must_exist=True) as inst:
        run = inst.store.get_run(run_id)
        with inst.holding(run.workflow, worker=cli_worker(), wait_s=wait):
            ended = inst.actions.resolve(run.id, choice, actor=actor(), result=result)
    if as_json:
        print_json(ended)
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
@store_option
@click.option("--reason", default=None, help="Recorded in the audit log.")
@reports_errors
def pause_command(workflow: str, store_url: str | None, reason: str | None) -> None:
    """Stop new runs of WORKFLOW until `keep resume`."""
    with opened(store_url, must_exist=True) as inst:
        inst.actions.pause(workflow, actor=actor(), reason=reason)
    click.echo(f"paused {workflow}; runs already waiting stay as they are")


@click.command("resume")
@click.argument("workflow")
@store_option
@reports_errors
def resume_command(workflow: str, store_url: str | None) -> None:
    """Let WORKFLOW run again after `keep pause`."""
    with opened(store_url, must_exist=True) as inst:
        inst.actions.resume(workflow, actor=actor())
    click.echo(f"resumed {workflow}")


@click.command("grant")
@click.argument("workflow")
@click.argument("permission")
@store_option
@doubles_option
@isolation_option
@wait_option
@reports_errors
def grant_command(
    workflow: str,
    permission: str,
    store_url: str | None,
    doubles: Path | None,
    isolation: str,
    wait: float | None,
) -> None:
    """Grant PERMISSION (such as sheets.write) to WORKFLOW; runs waiting for it continue.

    PERMISSION must be one a connector declares (`keep connectors`); a typo is
    refused with a did-you-mean (exit 2).
    """
    with opened(store_url, doubles=doubles, isolation=isolation, must_exist=True) as inst:
        check_permissions(inst, [permission], param_hint="PERMISSION", workflow=workflow)
        with inst.holding(workflow, worker=cli_worker(), wait_s=wait):
            resumed = inst.actions.grant(workflow, permission, actor=actor())
    click.echo(f"granted {permission} to {workflow}")
    for run in resumed:
        click.echo(f"  run {run.id} ({run.handler}) is now {run.status.value}")


@click.command("revoke")
@click.argument("workflow")
@click.argument("permission")
@store_option
@json_option
@reports_errors
def revoke_command(workflow: str, permission: str, store_url: str | None, as_json: bool) -> None:
    """Take PERMISSION back from WORKFLOW; runs that need it afterwards wait for `keep grant`.

    Exit 1 when WORKFLOW was never granted PERMISSION.
    """
    with opened(store_url, must_exist=True) as inst:
        record = inst.actions.revoke(workflow, permission, actor=actor())
    if as_json:
        print_json(WorkflowOutput.of(record))
    else:
        kept = ", ".join(record.grants) or "nothing"
        click.echo(f"revoked {permission} from {workflow}; it keeps: {kept}")


def _result_json(text: str) -> JsonValue:
    """`--result`: JSON text, or ``@FILE`` holding it."""
    if text.startswith("@"):
        source, where = read_text(Path(text[1:])), text[1:]
    else:
        source, where = text, "--result"
    try:
        value: JsonValue = json.loads(source)
    except json.JSONDecodeError as exc:
        raise click.BadParameter(
            f"{where} is not JSON ({exc.msg} at line {exc.lineno}, column {exc.colno})",
            param_hint="--result",
        ) from None
    return value
