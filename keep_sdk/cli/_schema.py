"""``keep schema [NAME]``: the JSON Schema of the contract models."""

from __future__ import annotations

import json
from typing import Any

import click

from keep_sdk.cases import SCHEMAS, schema_of
from keep_sdk.cli.outputs import OUTPUTS, output_schema
from keep_sdk.model import json_schema, schema_names

__all__ = ["schema_command"]


@click.command("schema")
@click.argument("name", required=False)
@click.option("--list", "list_only", is_flag=True, help="Print only the names.")
@click.option(
    "--output",
    "output",
    type=click.Choice(sorted(OUTPUTS)),
    default=None,
    help="Print the schema of this command's --json output instead.",
)
def schema_command(name: str | None, list_only: bool, output: str | None) -> None:
    """Print the JSON Schema of a contract model or of a file format (all of them without
    NAME; ``keep-case`` is a *.keep.yaml case file, ``keep-scenario`` a conformance
    scenario), or with --output COMMAND the schema of that command's --json output."""
    if output is not None:
        if name is not None:
            raise click.UsageError("give a model NAME or --output COMMAND, not both")
        click.echo(json.dumps(output_schema(output), indent=2))
        return
    names = [*schema_names(), *SCHEMAS]
    if list_only:
        click.echo("\n".join(names))
        return
    if name is None:
        click.echo(json.dumps({n: _schema(n) for n in names}, indent=2))
        return
    if name not in names:
        raise click.BadParameter(
            f"no model named {name!r}; choose one of: {', '.join(names)}", param_hint="NAME"
        )
    click.echo(json.dumps(_schema(name), indent=2))


def _schema(name: str) -> dict[str, Any]:
    return schema_of(name) if name in SCHEMAS else json_schema(name)
