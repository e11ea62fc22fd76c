"""The ``keep`` command line (exit codes and error style: `keep_sdk.console`).

Commands of a package live in that package (``keep_sdk/validator/command.py``)
and are added to the group at the end of this module.
"""

from __future__ import annotations

import json
import sys

import click

from keep_sdk.console import loaded_plugins, reports_errors
from keep_sdk.errors import KeepError
from keep_sdk.model import json_schema, schema_names

__all__ = ["cli", "main"]


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("keep-sdk")
    except PackageNotFoundError:
        return "0+unknown"


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(_version(), "--version", "-V", prog_name="keep")
def cli() -> None:
    """Validate, sandbox and durably run LLM-written JavaScript workflows."""


@cli.command()
@click.argument("name", required=False)
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["text", "json", "markdown"]),
    default="text",
    show_default=True,
    help="markdown is meant to be pasted into an LLM prompt.",
)
@reports_errors
def connectors(name: str | None, fmt: str) -> None:
    """List what scripts can call: every connector operation, its kind and permission.

    NAME narrows the listing to one connector (``sheets``) or one operation
    (``sheets.appendRow``).
    """
    from keep_sdk.connectors import ConnectorManifest, Manifest

    plugins = loaded_plugins()
    manifest = Manifest(connectors=[c.manifest() for c in plugins.connectors().values()])
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
        click.echo(manifest.model_dump_json(indent=2))
    elif fmt == "markdown":
        click.echo(manifest.to_markdown(), nl=False)
    else:
        click.echo(manifest.to_text())


@cli.command()
@click.argument("name", required=False)
@click.option("--list", "list_only", is_flag=True, help="Print only the model names.")
def schema(name: str | None, list_only: bool) -> None:
    """Print the JSON Schema of a contract model (all of them without NAME)."""
    names = schema_names()
    if list_only:
        click.echo("\n".join(names))
        return
    if name is None:
        click.echo(json.dumps({n: json_schema(n) for n in names}, indent=2))
        return
    if name not in names:
        raise click.BadParameter(
            f"no model named {name!r}; choose one of: {', '.join(names)}", param_hint="NAME"
        )
    click.echo(json.dumps(json_schema(name), indent=2))


@cli.command()
@click.argument("operation")
@click.argument("arguments", default="{}")
@reports_errors
def call(operation: str, arguments: str) -> None:
    """Check ARGUMENTS (JSON) for CONNECTOR.OPERATION; run it when it is a read.

    Reads run against a fresh instance of the connector (the built-in doubles
    start empty). Mutations are only checked: they run inside a workflow's
    mutate phase, where the host records them in the ledger first.
    """
    from keep_sdk.model import OperationKind

    connector_name, _, op_name = operation.partition(".")
    if not op_name:
        raise click.BadParameter(
            "expected CONNECTOR.OPERATION, such as sheets.appendRow", param_hint="OPERATION"
        )
    try:
        raw = json.loads(arguments)
    except json.JSONDecodeError as exc:
        raise click.BadParameter(f"not valid JSON: {exc}", param_hint="ARGUMENTS") from None
    classes = loaded_plugins().connectors()
    from keep_sdk.connectors import ConnectorSet

    instances = ConnectorSet([klass() for klass in classes.values()])
    declared = instances.operation(connector_name, op_name)
    parsed = declared.parse(raw, connector=connector_name)
    if declared.kind is OperationKind.MUTATION:
        click.echo(
            f"arguments are valid for ctx.{connector_name}.{op_name} "
            f"(a mutation: it runs only in a workflow's mutate phase)"
        )
        click.echo(parsed.model_dump_json(by_alias=True, indent=2))
        return
    result = instances.invoke(connector_name, op_name, raw)
    click.echo(json.dumps(result, indent=2))


# plugin commands

from keep_sdk.validator.command import validate_command  # noqa: E402

cli.add_command(validate_command)

from keep_sdk.conformance.command import conformance_command  # noqa: E402

cli.add_command(conformance_command)

from keep_sdk.scheduler.commands import COMMANDS as scheduler_commands  # noqa: E402

for _command in scheduler_commands:
    cli.add_command(_command)


def main(argv: list[str] | None = None) -> None:
    """Entry point of the ``keep`` console script."""
    try:
        cli.main(args=argv, prog_name="keep", standalone_mode=True)
    except KeepError as exc:
        click.echo(f"error: {exc}", err=True)
        sys.exit(1)
