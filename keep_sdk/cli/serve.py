"""``keep serve``: the web console (`keep_sdk.console`) on a store.

The token is configured with ``--token`` or ``KEEP_CONSOLE_TOKEN``; else it is
generated on first start and kept in ``console-token`` next to a SQLite store (a new
one each start for other stores), and printed in the sign-in link. A non-loopback
``--host`` needs a configured token.
"""

from __future__ import annotations

import importlib.util

import click

from keep_sdk.cli._options import store_option
from keep_sdk.cli.support import EXIT_USAGE, fail, reports_errors
from keep_sdk.stores import redacted_url

__all__ = ["serve_command"]

_NEEDS = ("starlette", "uvicorn", "jinja2", "multipart")
"""The modules of the ``console`` extra."""


@click.command("serve")
@store_option
@click.option("--host", default="127.0.0.1", show_default=True, help="Address to listen on.")
@click.option(
    "--port", type=click.IntRange(0, 65535), default=8787, show_default=True, help="Port."
)
@click.option(
    "--token",
    envvar="KEEP_CONSOLE_TOKEN",
    default=None,
    help="The token every request must carry (env KEEP_CONSOLE_TOKEN); generated if not given.",
)
@reports_errors
def serve_command(store_url: str | None, host: str, port: int, token: str | None) -> None:
    """Serve the web console: what came in, what went out, what waits for you, and your actions.

    Prints the sign-in link (it carries the token; without --token it is kept in
    console-token next to a SQLite store). Binds to 127.0.0.1 unless --host says
    otherwise, which needs a configured --token.
    """
    missing = [m for m in _NEEDS if importlib.util.find_spec(m) is None]
    if missing:
        fail(
            f"the console needs {', '.join(missing)}: pip install 'keep-sdk[console]'",
            code=EXIT_USAGE,
        )
    if token is not None and len(token) < 16:
        raise click.BadParameter("use at least 16 characters", param_hint="--token")
    from keep_sdk.app import sqlite_path
    from keep_sdk.console import ConsoleSettings, check_bind, serve, stored_token
    from keep_sdk.errors import ConfigurationError
    from keep_sdk.stores import DEFAULT_STORE_URL

    try:
        check_bind(host, token_configured=token is not None)
    except ConfigurationError as exc:
        raise click.UsageError(str(exc)) from None
    database = sqlite_path(store_url or DEFAULT_STORE_URL)
    if token is None and database is not None and database.is_file():
        token = stored_token(database.parent / "console-token")
        configured = False
    else:
        configured = token is not None
    settings = ConsoleSettings(
        store_url=store_url, host=host, port=port, **({"token": token} if token else {})
    )

    def announce(link: str) -> None:
        shown = redacted_url(settings.store_url) if settings.store_url else "the default store"
        click.echo(f"keep console on {shown}", err=True)
        click.echo(f"sign in: {link}", err=True)

    from keep_sdk.cli._options import opened

    with opened(store_url, isolation=settings.isolation, must_exist=True) as installation:
        serve(
            settings,
            token_configured=configured,
            announce=announce,
            installation=installation,
        )
