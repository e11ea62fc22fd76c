"""``keep connectors`` (what scripts can call, for people and prompts) and ``keep call``."""

from __future__ import annotations

import json

import click

from keep_sdk.cli._options import configuration, script_manifest, store_option
from keep_sdk.cli.support import loaded_plugins, reports_errors
from keep_sdk.errors import KeepError

__all__ = ["call_command", "connectors_command"]


@click.command("connectors")
@click.argument("name", required=False)
@store_option
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["text", "json", "markdown", "typescript"]),
    default="text",
    show_default=True,
    help="markdown is meant to be pasted into an LLM prompt; typescript is a .d.ts of Keep "
    "and ctx in each phase, for an editor or a model writing the script.",
)
@reports_errors
def connectors_command(name: str | None, store_url: str | None, fmt: str) -> None:
    """List what scripts can call: every connector operation, its kind and permission.

    Registered connectors and the instances keep.toml configures (never their
    secrets). NAME narrows the listing to one connector (``sheets``) or one
    operation (``sheets.appendRow``).
    """
    from keep_sdk.connectors import ConnectorManifest, Manifest

    loaded_plugins()
    manifest = script_manifest(store_url)
    if name:
        connector_name, _, op_name = name.partition(".")
        try:
            connector = manifest.connector(connector_name)
            if op_name:
                connector = ConnectorManifest(
                    name=connector.name,
                    description=connector.description,
                    operations=[connector.operation(op_name)],
                )
        except KeepError as exc:
            raise click.BadParameter(str(exc), param_hint="NAME") from None
        manifest = Manifest(connectors=[connector])
    if fmt == "json":
        click.echo(manifest.model_dump_json(indent=2, by_alias=True))
    elif fmt == "typescript":
        from keep_sdk.contract.typescript import declarations

        click.echo(declarations(manifest), nl=False)
    elif fmt == "markdown":
        click.echo(manifest.to_markdown(), nl=False)
    else:
        click.echo(manifest.to_text())


@click.command("call")
@click.argument("operation")
@click.argument("arguments", default="{}")
@reports_errors
def call_command(operation: str, arguments: str) -> None:
    """Check ARGUMENTS (JSON) for CONNECTOR.OPERATION; run it when it is a read.

    Reads run against a fresh instance of the connector (the built-in doubles
    start empty; keep.toml's instances reach their real service). Mutations are
    only checked: they run inside a workflow's mutate phase, where the host
    records them in the ledger first.
    """
    from keep_sdk.app import script_connectors
    from keep_sdk.contract.phases import MUTATING_KINDS

    connector_name, _, op_name = operation.partition(".")
    if not op_name:
        raise click.BadParameter(
            "expected CONNECTOR.OPERATION, such as sheets.appendRow", param_hint="OPERATION"
        )
    try:
        raw = json.loads(arguments)
    except json.JSONDecodeError as exc:
        raise click.BadParameter(f"not valid JSON: {exc}", param_hint="ARGUMENTS") from None
    instances = script_connectors(configuration(None), plugins=loaded_plugins())
    try:
        declared = instances.operation(connector_name, op_name)
        parsed = declared.parse(raw, connector=connector_name)
        if declared.kind in MUTATING_KINDS:
            click.echo(
                f"arguments are valid for ctx.{connector_name}.{op_name} "
                f"(a mutation: it runs only in a workflow's mutate phase)"
            )
            click.echo(parsed.model_dump_json(by_alias=True, indent=2))
            return
        result = instances.invoke(connector_name, op_name, raw)
    finally:
        instances.close()
    click.echo(json.dumps(result, indent=2))
