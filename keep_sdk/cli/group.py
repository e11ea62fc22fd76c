"""The ``keep`` group: every command of the package under one entry point.

Exit codes and error style: `keep_sdk.cli.support`. Each command group lives in its
own module of this package and is named in `COMMAND_MODULES`; a command's module is
imported the first time the command is looked up, so ``keep --version`` and a small
command import only what they use.
"""

from __future__ import annotations

from collections.abc import Iterator, MutableMapping
from importlib import import_module
from pathlib import Path
from typing import Any, NoReturn

import click

from keep_sdk.cli._interrupts import ending
from keep_sdk.errors import KeepError

__all__ = ["COMMAND_MODULES", "CONFIG_META", "cli", "keep_version", "main"]

CONFIG_META = "keep.config_path"
"""Where the group's ``--config PATH`` is kept in the click context's meta."""

COMMAND_MODULES: dict[str, tuple[str, str]] = {
    "connectors": ("_connectors", "connectors_command"),
    "schema": ("_schema", "schema_command"),
    "call": ("_connectors", "call_command"),
    "validate": ("_validate", "validate_command"),
    "conformance": ("_conformance", "conformance_command"),
    "run": ("run", "run_command"),
    "worker": ("run", "worker_command"),
    "status": ("_inspection", "status_command"),
    "events": ("_inspection", "events_command"),
    "runs": ("_inspection", "runs_command"),
    "ledger": ("_inspection", "ledger_command"),
    "skip": ("_actions", "skip_command"),
    "resolve": ("_actions", "resolve_command"),
    "pause": ("_actions", "pause_command"),
    "resume": ("_actions", "resume_command"),
    "grant": ("_actions", "grant_command"),
    "revoke": ("_actions", "revoke_command"),
    "publish": ("_publish", "publish_command"),
    "migrate": ("_migrate", "migrate_command"),
    "serve": ("serve", "serve_command"),
    "config": ("_config", "config_command"),
    "notify": ("_durable", "notify_command"),
    "cancel": ("_durable", "cancel_command"),
    "wait": ("_durable", "wait_command"),
    "test": ("_testing", "test_command"),
    "replay": ("_replay", "replay_command"),
    "diff": ("_diff", "diff_command"),
    "repair": ("repairing", "repair_command"),
    "accept-rollback": ("_rollback", "accept_rollback_command"),
    "deploy": ("_deploy", "deploy_command"),
    "mcp": ("_mcp", "mcp_command"),
}
"""Every ``keep`` command, in the order they were added: name → (module of
``keep_sdk.cli``, attribute)."""


class _LazyCommands(MutableMapping[str, click.Command]):
    """The group's commands by name; a command's module is imported on first lookup."""

    def __init__(self, spec: dict[str, tuple[str, str]]) -> None:
        self._spec = dict(spec)
        self._loaded: dict[str, click.Command] = {}

    def __getitem__(self, name: str) -> click.Command:
        if name not in self._loaded:
            module, attribute = self._spec[name]
            command = getattr(import_module(f"keep_sdk.cli.{module}"), attribute)
            assert isinstance(command, click.Command), (name, command)
            self._loaded[name] = command
        return self._loaded[name]

    def __setitem__(self, name: str, command: click.Command) -> None:
        self._spec.pop(name, None)
        self._loaded[name] = command

    def __delitem__(self, name: str) -> None:
        known = name in self
        self._spec.pop(name, None)
        self._loaded.pop(name, None)
        if not known:
            raise KeyError(name)

    def __contains__(self, name: object) -> bool:
        return name in self._spec or name in self._loaded

    def __iter__(self) -> Iterator[str]:
        yield from self._spec
        yield from (name for name in self._loaded if name not in self._spec)

    def __len__(self) -> int:
        return len(self._spec.keys() | self._loaded.keys())


def keep_version() -> str:
    """The installed distribution's version (``0+unknown`` when it is not installed)."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("keep-sdk")
    except PackageNotFoundError:
        return "0+unknown"


def _print_version(ctx: click.Context, _param: click.Parameter, value: bool) -> None:
    if not value or ctx.resilient_parsing:
        return
    click.echo(f"keep, version {keep_version()}")
    ctx.exit()


@click.group(
    context_settings={"help_option_names": ["-h", "--help"]},
    commands=_LazyCommands(COMMAND_MODULES),
)
@click.option(
    "--version",
    "-V",
    is_flag=True,
    expose_value=False,
    is_eager=True,
    callback=_print_version,
    help="Show the version and exit.",
)
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


def __getattr__(name: str) -> Any:
    """``COMMANDS``: every command, in `COMMAND_MODULES` order (imports every module)."""
    if name == "COMMANDS":
        return tuple(cli.commands[command] for command in COMMAND_MODULES)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def main(argv: list[str] | None = None) -> NoReturn:
    """Entry point of the ``keep`` console script: run one command and end the process.

    Ctrl-C: 130 when it ends a command, and never a traceback (`keep_sdk.cli._interrupts`).
    """
    ending(lambda: _command_status(argv))


def _command_status(argv: list[str] | None) -> int:
    try:
        result = cli.main(args=argv, prog_name="keep", standalone_mode=False)
    except click.exceptions.Abort:
        from keep_sdk.cli._interrupts import EXIT_INTERRUPTED

        click.echo("interrupted", err=True)
        return EXIT_INTERRUPTED
    except click.ClickException as exc:
        exc.show()
        return exc.exit_code
    except KeepError as exc:
        from keep_sdk.cli.text import shown

        click.echo(f"error: {shown(exc)}", err=True)
        return 1
    return result if isinstance(result, int) else 0
