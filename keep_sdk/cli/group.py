"""The ``keep`` group: every command of the package under one entry point.

Exit codes and error style: `keep_sdk.cli.support`. Each command group lives
in its own module of this package and is added here.
"""

from __future__ import annotations

import sys
from pathlib import Path

import click

from keep_sdk.cli.actions import (
    grant_command,
    pause_command,
    resolve_command,
    resume_command,
    revoke_command,
    skip_command,
)
from keep_sdk.cli.config import config_command
from keep_sdk.cli.conformance import conformance_command
from keep_sdk.cli.connectors import call_command, connectors_command
from keep_sdk.cli.deploy import deploy_command
from keep_sdk.cli.diff import diff_command
from keep_sdk.cli.durable import cancel_command, notify_command, wait_command
from keep_sdk.cli.inspection import events_command, ledger_command, runs_command, status_command
from keep_sdk.cli.migrate import migrate_command
from keep_sdk.cli.options import CONFIG_META
from keep_sdk.cli.publish import publish_command
from keep_sdk.cli.repairing import repair_command
from keep_sdk.cli.replay import replay_command
from keep_sdk.cli.rollback import accept_rollback_command
from keep_sdk.cli.run import run_command, worker_command
from keep_sdk.cli.schema import schema_command
from keep_sdk.cli.serve import serve_command
from keep_sdk.cli.support import keep_version
from keep_sdk.cli.testing import test_command
from keep_sdk.cli.validate import validate_command
from keep_sdk.errors import KeepError

__all__ = ["COMMANDS", "cli", "main"]


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(keep_version(), "--version", "-V", prog_name="keep")
@click.option(
    "--config",
    "config_path",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help="keep.toml to use (default: $KEEP_CONFIG, else keep.toml in the working folder or "
    "a parent, else next to a SQLite store).",
)
@click.pass_context
def cli(ctx: click.Context, config_path: Path | None) -> None:
    """Validate, sandbox and durably run LLM-written JavaScript workflows."""
    ctx.meta[CONFIG_META] = config_path


COMMANDS: tuple[click.Command, ...] = (
    connectors_command,
    schema_command,
    call_command,
    validate_command,
    conformance_command,
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
    revoke_command,
    publish_command,
    migrate_command,
    serve_command,
    config_command,
    notify_command,
    cancel_command,
    wait_command,
    test_command,
    replay_command,
    diff_command,
    repair_command,
    accept_rollback_command,
    deploy_command,
)
"""Every ``keep`` command, in the order they were added."""

for _command in COMMANDS:
    cli.add_command(_command)


def main(argv: list[str] | None = None) -> None:
    """Entry point of the ``keep`` console script."""
    try:
        cli.main(args=argv, prog_name="keep", standalone_mode=True)
    except KeepError as exc:
        from keep_sdk.cli.text import shown

        click.echo(f"error: {shown(exc)}", err=True)
        sys.exit(1)
