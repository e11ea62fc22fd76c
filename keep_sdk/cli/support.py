"""Shared helpers of the ``keep`` commands: clean errors, exit codes, plugins, JSON, the user.

Exit codes: 0 success, 1 the command ran and found a problem (an invalid
script, a failed run, a refused action), 2 bad usage or unreadable input.
Errors are one readable message on stderr, never a traceback.
"""

from __future__ import annotations

import getpass
import json
from collections.abc import Callable
from functools import wraps
from typing import TYPE_CHECKING, Any, NoReturn, TypeVar

import click
from pydantic import BaseModel

from keep_sdk.errors import KeepError

if TYPE_CHECKING:
    from keep_sdk.plugins import KeepPlugins

__all__ = [
    "EXIT_PROBLEM",
    "EXIT_USAGE",
    "actor",
    "fail",
    "keep_version",
    "loaded_plugins",
    "print_json",
    "reports_errors",
]

EXIT_PROBLEM = 1
EXIT_USAGE = 2

F = TypeVar("F", bound=Callable[..., Any])


def keep_version() -> str:
    """The installed distribution's version (``0+unknown`` when it is not installed)."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("keep-sdk")
    except PackageNotFoundError:
        return "0+unknown"


def fail(message: str, *, code: int = EXIT_PROBLEM) -> NoReturn:
    """Print `message` as an error on stderr and exit with `code`."""
    click.echo(f"error: {message}", err=True)
    raise SystemExit(code)


def reports_errors(func: F) -> F:
    """Turn a `KeepError` raised by a command into a clean message and exit code 1."""

    @wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return func(*args, **kwargs)
        except KeepError as exc:
            fail(str(exc))

    return wrapper  # type: ignore[return-value]


def loaded_plugins() -> KeepPlugins:
    """The process-wide plugins, after warning on stderr about any that failed to load."""
    from keep_sdk.plugins import default_plugins

    plugins = default_plugins()
    for error in plugins.load_errors:
        click.echo(f"warning: {error}", err=True)
    return plugins


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
