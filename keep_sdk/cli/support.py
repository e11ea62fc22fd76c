"""Shared helpers of the ``keep`` commands: clean errors, exit codes, plugins, JSON, the user.

Exit codes: 0 success, 1 the command ran and found a problem (an invalid
script, a failed run, a refused action), 2 bad usage or unreadable input.
Errors are one readable message on stderr, never a traceback.
"""

from __future__ import annotations

import getpass
import json
import logging
import os
import sys
from collections.abc import Callable, Iterable
from functools import wraps
from typing import TYPE_CHECKING, Any, NoReturn, TypeVar

import click
from pydantic import BaseModel

from keep_sdk.cli.group import keep_version
from keep_sdk.errors import ActionRefused, KeepError

if TYPE_CHECKING:
    from pathlib import Path

    from keep_sdk.app import Installation
    from keep_sdk.plugins import KeepPlugins

__all__ = [
    "EXIT_PROBLEM",
    "EXIT_USAGE",
    "abandon",
    "actor",
    "check_permissions",
    "decode",
    "fail",
    "keep_version",
    "loaded_plugins",
    "print_json",
    "read_text",
    "reports_errors",
]

EXIT_PROBLEM = 1
EXIT_USAGE = 2

F = TypeVar("F", bound=Callable[..., Any])


def fail(message: str, *, code: int = EXIT_PROBLEM) -> NoReturn:
    """Print `message` as an error on stderr (controls shown as escapes) and exit with
    `code`."""
    from keep_sdk.cli.text import shown

    click.echo(f"error: {shown(message)}", err=True)
    raise SystemExit(code)


def abandon(message: str) -> NoReturn:
    """Print `message` as an error and end the process at once with exit code 1, closing
    nothing: SQLite closing a WAL store whose files were made read-only touches shared
    memory it cannot grow, and the process would die of SIGBUS with no message."""
    from keep_sdk.cli.text import shown

    click.echo(f"error: {shown(message)}", err=True)
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(EXIT_PROBLEM)


def reports_errors(func: F) -> F:
    """Turn a `KeepError` raised by a command into a clean message and exit code 1."""

    @wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return func(*args, **kwargs)
        except KeepError as exc:
            fail(str(exc))

    return wrapper  # type: ignore[return-value]


_loaded: list[KeepPlugins] = []


def loaded_plugins() -> KeepPlugins:
    """The process-wide plugins, loaded once; a plugin that failed to load is reported on
    stderr once per process (the command line reports it, not the logging fallback)."""
    if not _loaded:
        from keep_sdk.plugins import default_plugins

        logging.getLogger("keep_sdk.plugins").addHandler(logging.NullHandler())
        plugins = default_plugins()
        for error in plugins.load_errors:
            from keep_sdk.cli.text import shown

            click.echo(f"warning: {shown(error)}", err=True)
        _loaded.append(plugins)
    return _loaded[0]


def actor() -> str:
    """The name a person's actions are audited under: the login name, else ``cli``."""
    try:
        return getpass.getuser()
    except (KeyError, OSError):
        return "cli"


def print_json(value: Any) -> None:
    """Print a pydantic model (by alias) or any JSON-able value, indented, on stdout."""
    if isinstance(value, BaseModel):
        click.echo(value.model_dump_json(indent=2, by_alias=True))
    else:
        click.echo(json.dumps(value, indent=2, default=str))


def check_permissions(
    inst: Installation,
    permissions: Iterable[str],
    *,
    param_hint: str,
    workflow: str | None = None,
) -> None:
    """Refuse as bad usage (exit 2, with a did-you-mean) any permission no connector declares
    (one `workflow`'s frozen connectors declare is accepted without building any)."""
    for permission in permissions:
        try:
            inst.actions.check_permission(permission, workflow=workflow)
        except ActionRefused as exc:
            raise click.BadParameter(str(exc), param_hint=param_hint) from None


def decode(data: bytes, name: str) -> str:
    """`data` as UTF-8 text (a BOM is dropped); exit 2 with one line when it is not."""
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        fail(
            f"{name} is not UTF-8 text (byte {exc.start}): save it as UTF-8 and try again",
            code=EXIT_USAGE,
        )


def read_text(path: Path) -> str:
    """The UTF-8 text of `path`; exit 2 with one line when it cannot be read or decoded."""
    try:
        data = path.read_bytes()
    except OSError as exc:
        fail(f"cannot read {path}: {exc.strerror or exc}", code=EXIT_USAGE)
    return decode(data, str(path))
