"""``keep schema [NAME]``: the JSON Schema of the contract models."""

from __future__ import annotations

import json

import click

from keep_sdk.model import json_schema, schema_names

__all__ = ["schema_command"]


@click.command("schema")
@click.argument("name", required=False)
@click.option("--list", "list_only", is_flag=True, help="Print only the model names.")
def schema_command(name: str | None, list_only: bool) -> None:
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
