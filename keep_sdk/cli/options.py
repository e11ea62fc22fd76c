"""Options the state-touching commands share, and the installation they open.

``--store URL`` everywhere (default ``sqlite:///.keep/keep.db``); ``--doubles``
and ``--isolation`` on the commands that run scripts; ``--json`` on the ones
that print for machines.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TypeVar

import click

from keep_sdk.app import ISOLATIONS, Installation
from keep_sdk.cli.support import loaded_plugins

__all__ = [
    "doubles_option",
    "isolation_option",
    "json_option",
    "opened",
    "store_option",
]

F = TypeVar("F", bound=Callable[..., Any])


def store_option(func: F) -> F:
    """``--store URL`` as the `store_url` parameter."""
    return click.option(
        "--store",
        "store_url",
        metavar="URL",
        default=None,
        help="sqlite:///path/keep.db (default sqlite:///.keep/keep.db), postgresql://…, memory://",
    )(func)


def doubles_option(func: F) -> F:
    """``--doubles PATH`` as the `doubles` parameter."""
    return click.option(
        "--doubles",
        type=click.Path(dir_okay=False, path_type=Path),
        default=None,
        help="SQLite file holding the built-in connectors' data (default: doubles.db next to "
        "a SQLite store; in memory otherwise).",
    )(func)


def isolation_option(func: F) -> F:
    """``--isolation process|in-process`` as the `isolation` parameter."""
    return click.option(
        "--isolation",
        type=click.Choice(ISOLATIONS),
        default="process",
        show_default=True,
        help="Run each phase in a killable worker process, or in this process.",
    )(func)


def json_option(func: F) -> F:
    """``--json`` as the `as_json` flag."""
    return click.option("--json", "as_json", is_flag=True, help="Print JSON for machines.")(func)


@contextmanager
def opened(
    store_url: str | None,
    *,
    doubles: Path | None = None,
    isolation: str = "in-process",
    read_only: bool = False,
    must_exist: bool = False,
) -> Iterator[Installation]:
    """The installation at `store_url`, closed when the block ends (whatever it raises).

    `read_only` (``status``, ``events``, ``runs``, ``ledger``): a missing store is an
    error and nothing is created; `must_exist` (a person's actions): a missing store
    is an error (`Installation.open`)."""
    installation = Installation.open(
        store_url,
        plugins=loaded_plugins(),
        doubles=doubles,
        isolation=isolation,
        read_only=read_only,
        must_exist=must_exist,
    )
    try:
        yield installation
    finally:
        installation.close()
