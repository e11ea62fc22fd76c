"""``keep accept-rollback``: open a SQLite store again after it was restored on purpose."""

from __future__ import annotations

import click

from keep_sdk.app import sqlite_path
from keep_sdk.cli._options import json_option, store_option
from keep_sdk.cli.outputs import RollbackOutput
from keep_sdk.cli.support import EXIT_USAGE, fail, print_json, reports_errors
from keep_sdk.stores import DEFAULT_STORE_URL
from keep_sdk.stores.sql import accept_rollback

__all__ = ["accept_rollback_command"]


@click.command("accept-rollback")
@store_option
@json_option
@reports_errors
def accept_rollback_command(store_url: str | None, as_json: bool) -> None:
    """Accept a SQLite store that went back in time, as it is now.

    keep refuses to open a store whose database holds fewer mutation intents than
    were committed to it (a deleted -wal file, an older copy put in its place),
    because its lost runs would repeat their mutations. Run this only when you put
    that database there on purpose (a backup you restored): the runs it lost are
    forgotten and their events run again, mutations included. Stop every keep
    process first.
    """
    url = store_url or DEFAULT_STORE_URL
    database = sqlite_path(url)
    if database is None:
        fail(
            f"{url} is not a SQLite store; only SQLite stores keep a commit mark to accept",
            code=EXIT_USAGE,
        )
    if not database.is_file():
        fail(f"there is no keep store at {database}", code=EXIT_USAGE)
    accepted = accept_rollback(url)
    if as_json:
        print_json(RollbackOutput.of(accepted))
        return
    if accepted.forgotten == 0:
        click.echo(f"{database} holds every mutation intent committed to it; nothing to accept")
        return
    click.echo(
        f"accepted {database} as it is: {accepted.forgotten} committed mutation intent(s) "
        f"(#{accepted.mark_after + 1} to #{accepted.mark_before}) are forgotten; the events "
        "of the runs it lost will run again"
    )
