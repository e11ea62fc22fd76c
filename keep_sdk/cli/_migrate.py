"""``keep migrate FILE [-o OUT] [--name NAME] [--json]``.

Rewrites a script in the original product's format into this SDK's format,
then validates the result. The migrated script goes to OUT (or to standard
output); the notes (each ``// TODO(migrate)`` left in the script) and the
validator's report go to standard error, or all of it as one JSON document with
``--json``. Exit codes: 0 when the migrated script validates without errors, 1
when errors are left (each TODO is one) or a ``TODO(migrate): review:`` (a result shape
or query whose meaning may differ), 2 for bad usage or unreadable input.
"""

from __future__ import annotations

import json
from pathlib import Path

import click

from keep_sdk.cli.support import EXIT_PROBLEM, EXIT_USAGE, decode, fail, loaded_plugins, read_text
from keep_sdk.validator import render_text
from keep_sdk.validator.migrate import migrate

__all__ = ["migrate_command"]


@click.command("migrate")
@click.argument("file", metavar="FILE")
@click.option(
    "-o",
    "--output",
    "output",
    type=click.Path(dir_okay=False, writable=True),
    help="Write the migrated script here instead of standard output.",
)
@click.option("--name", help="The workflow's name when the script has none (default: FILE's stem).")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON document for machines.")
def migrate_command(file: str, output: str | None, name: str | None, as_json: bool) -> None:
    """Rewrite FILE from the original product's format into this SDK's format.

    `const workflow = {...}` becomes `export default Keep.workflow({...})`,
    handlers take `ctx` first, `Topics.*` and mapped tool calls become `ctx`
    calls; anything without a mapping gets a `// TODO(migrate)` line. FILE may
    be - for standard input.
    """
    if file == "-":
        with click.open_file("-", "rb") as stream:
            source = decode(stream.read(), "standard input")
        stem = "migrated"
    else:
        path = Path(file)
        if not path.is_file():
            fail(f"{file} is not a file; give a .js script or -", code=EXIT_USAGE)
        source = read_text(path)
        stem = path.stem
    migration = migrate(source, name=name or stem)
    shown = output or (file if file != "-" else "migrated.js")
    report = loaded_plugins().validate(migration.source, filename=shown)
    if output is not None:
        try:
            Path(output).write_text(migration.source, encoding="utf-8")
        except OSError as exc:
            fail(f"cannot write {output}: {exc.strerror or exc}", code=EXIT_USAGE)
    reviews = sum(1 for note in migration.notes if note.review)
    if as_json:
        document = {
            "source": migration.source,
            "changed": migration.changed,
            "notes": [
                {
                    "line": note.line or None,
                    "message": note.message,
                    "todo": note.todo,
                    "review": note.review,
                }
                for note in migration.notes
            ],
            "report": json.loads(report.model_dump_json(by_alias=True)),
        }
        click.echo(json.dumps(document, indent=2, ensure_ascii=False))
    else:
        if output is None:
            click.echo(migration.source, nl=False)
        for note in migration.notes:
            where = f"{shown}:{note.line}: TODO(migrate)" if note.todo else f"{shown}: note"
            click.echo(f"{where}: {note.message}", err=True)
        if report.diagnostics:
            click.echo(render_text(report, migration.source), err=True)
        left = len(report.errors)
        summary = "migrated script validates clean" if not left else f"{left} error(s) left"
        if reviews:
            summary += f"; {reviews} TODO(migrate) review(s) left: its meaning may differ there"
        click.echo(f"{shown}: {summary}", err=True)
    if report.errors or reviews:
        raise SystemExit(EXIT_PROBLEM)
