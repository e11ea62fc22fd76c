"""``keep mcp``: serve keep's authoring tools to an MCP client (stdio, or streamable HTTP)."""

from __future__ import annotations

import importlib.util

import click

from keep_sdk.cli._options import CONFIG_META, configuration, store_option
from keep_sdk.cli.support import EXIT_USAGE, fail, loaded_plugins, reports_errors

__all__ = ["mcp_command"]


@click.command("mcp")
@store_option
@click.option(
    "--allow-deploy",
    is_flag=True,
    help="Offer the deploy tool (it never grants a permission; a person does).",
)
@click.option(
    "--http",
    "http",
    is_flag=True,
    help="Serve streamable HTTP at http://HOST:PORT/mcp behind the console's token "
    "instead of standard input and output.",
)
@click.option("--host", default="127.0.0.1", show_default=True, help="With --http.")
@click.option("--port", type=click.IntRange(1, 65535), default=8766, show_default=True)
@click.option(
    "--token",
    default=None,
    envvar="KEEP_CONSOLE_TOKEN",
    help="With --http: the token every request carries as a bearer token (env "
    "KEEP_CONSOLE_TOKEN); default: the console's, kept in console-token next to the store.",
)
@reports_errors
def mcp_command(
    store_url: str | None,
    allow_deploy: bool,
    http: bool,
    host: str,
    port: int,
    token: str | None,
) -> None:
    """Serve keep to an MCP client: validate, connectors, run_cases, replay, diff, status
    (read only) and deploy (with --allow-deploy); resources for the rules, the case format
    and the connector declarations (JSON and TypeScript).

    Tools work on --store and keep.toml as every keep command does; paths are relative
    to the folder keep mcp runs in. Logs go to standard error.
    """
    if importlib.util.find_spec("mcp") is None:
        fail("keep mcp needs the MCP SDK: pip install 'keep-sdk[mcp]'", code=EXIT_USAGE)
    from keep_sdk.mcp_server import Workspace, serve_http, serve_stdio

    configuration(store_url)
    workspace = Workspace(
        plugins=loaded_plugins(),
        store_url=store_url,
        config_path=click.get_current_context().meta.get(CONFIG_META),
        allow_deploy=allow_deploy,
    )
    if not http:
        serve_stdio(workspace)
        return
    secret = _token(store_url, host, token)
    click.echo(
        f"keep mcp on http://{host}:{port}/mcp; send the console's token as "
        "Authorization: Bearer <token>",
        err=True,
    )
    serve_http(workspace, host=host, port=port, token=secret)


def _token(store_url: str | None, host: str, token: str | None) -> str:
    """The console's token: given, or kept next to a SQLite store (created there)."""
    from keep_sdk.app import sqlite_path
    from keep_sdk.console import check_bind, stored_token
    from keep_sdk.errors import ConfigurationError
    from keep_sdk.stores import DEFAULT_STORE_URL

    if token is not None and len(token) < 16:
        raise click.BadParameter("use at least 16 characters", param_hint="--token")
    try:
        check_bind(host, token_configured=token is not None)
    except ConfigurationError as exc:
        raise click.UsageError(str(exc)) from None
    if token is not None:
        return token
    database = sqlite_path(store_url or DEFAULT_STORE_URL)
    if database is None:
        fail("give --token (or KEEP_CONSOLE_TOKEN) for a store that is not a SQLite file")
    return stored_token(database.parent / "console-token")
