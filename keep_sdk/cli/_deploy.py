"""``keep deploy FILE``: validate once, deploy (or leave the version unchanged), grant; run
nothing. `deploy_script` is the path ``keep run`` deploys through too."""

from __future__ import annotations

from pathlib import Path

import click

from keep_sdk.app import Installation
from keep_sdk.cli._options import json_option, load_script, opened, store_option
from keep_sdk.cli.outputs import DeployOutput
from keep_sdk.cli.support import (
    actor,
    check_permissions,
    fail,
    loaded_plugins,
    print_json,
    read_text,
    reports_errors,
)
from keep_sdk.cli.text import console, line, styled
from keep_sdk.errors import ScriptRejected
from keep_sdk.runtime import CheckedScript
from keep_sdk.stores import redacted_url

__all__ = ["deploy_command", "deploy_script", "validated"]


def validated(file: Path, source: str, store_url: str | None, name: str | None) -> CheckedScript:
    """`source` validated once (`load_script`); a script with errors prints the validator's
    report on stderr and exits 1 before any store is opened."""
    from keep_sdk.validator import render_text

    try:
        loaded_plugins()
        return load_script(source, str(file), store_url, name=name)
    except ScriptRejected as exc:
        if exc.report is not None:
            click.echo(render_text(exc.report, source), err=True)
        fail(f"{file} has errors; fix them and run again (nothing was deployed)")


def deploy_script(
    inst: Installation, checked: CheckedScript, workflow: str, grants: tuple[str, ...]
) -> tuple[int, bool]:
    """Deploy `checked` as `workflow` unless it is the current version (no second
    validation), then grant `grants` (checked first by the caller). Runs nothing: runs that
    waited for a permission continue when a scheduler runs. Returns ``(version, deployed)``."""
    version, deployed = inst.runtime.deploy_if_changed(
        checked.source, name=workflow, filename=checked.filename, checked=checked
    )
    for permission in grants:
        inst.store.grant_permission(workflow, permission, actor=actor())
    return version, deployed


def _needed(checked: CheckedScript) -> list[str]:
    """The permissions of the operations the script calls (as ``keep diff`` reads them)."""
    from keep_sdk.repair.surface import surface_of

    surface = surface_of(
        checked.source,
        connectors=checked.connectors,
        policy=checked.policy,
        filename=checked.filename,
    )
    return surface.permissions


@click.command("deploy")
@click.argument("file", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@store_option
@click.option(
    "--grant",
    "grants",
    multiple=True,
    metavar="PERMISSION",
    help="Grant a permission (sheets.write) to the workflow; repeatable.",
)
@click.option("--name", default=None, help="Deploy under this name instead of the script's.")
@json_option
@reports_errors
def deploy_command(
    file: Path,
    store_url: str | None,
    grants: tuple[str, ...],
    name: str | None,
    as_json: bool,
) -> None:
    """Validate FILE, deploy it (a new version when it changed) and grant permissions.

    Runs nothing: no producer, no consumer, no scheduler. A script with errors
    (exit 1, with the validator's report) or a permission no connector declares
    (exit 2, with a did-you-mean) is refused before anything is written. The
    output names the version and the permissions the script needs that the
    workflow does not hold yet; `keep run` or `keep worker` runs it.
    """
    source = read_text(file)
    checked = validated(file, source, store_url, name)
    workflow = name or checked.workflow.manifest.name
    if not workflow:
        fail(f'{file} declares no name; add name: "..." to Keep.workflow({{...}}) or --name')
    with opened(store_url, isolation="in-process") as inst:
        check_permissions(inst, grants, param_hint="--grant")
        version, deployed = deploy_script(inst, checked, workflow, grants)
        held = sorted(inst.store.get_workflow(workflow).grants)
        needed = _needed(checked)
        output = DeployOutput(
            workflow=workflow,
            version=version,
            deployed=deployed,
            store=redacted_url(inst.store_url),
            granted=list(dict.fromkeys(grants)),
            grants=held,
            needed=needed,
            missing=[p for p in needed if p not in held],
        )
    if as_json:
        print_json(output)
        return
    _render(output)


def _render(output: DeployOutput) -> None:
    out = console()
    what = (
        f"deployed as version {output.version}"
        if output.deployed
        else f"version {output.version} unchanged"
    )
    out.print(
        line(styled(output.workflow, "bold"), f" {what}; store {output.store}"), soft_wrap=True
    )
    if output.granted:
        out.print(line("  granted: ", ", ".join(output.granted)), soft_wrap=True)
    out.print(line("  holds: ", ", ".join(output.grants) or "no permission"), soft_wrap=True)
    if output.missing:
        commands = [
            f"keep grant {output.workflow} {p} --store {output.store}" for p in output.missing
        ]
        out.print(
            line("  not granted yet: ", ", ".join(output.missing), " (", "; ".join(commands), ")"),
            soft_wrap=True,
        )
    else:
        out.print(line("  the script needs no permission it does not hold"), soft_wrap=True)
