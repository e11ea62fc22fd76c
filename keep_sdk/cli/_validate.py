"""``keep validate PATH... [--format text|json|sarif]``.

Exit codes: 0 when no script has an error (warnings allowed), 1 when any
has, 2 for bad usage or input that cannot be read. With ``--format json`` or
``sarif`` every script that can be read gets a report, one that is not UTF-8
included (its undecodable bytes are a ``syntax-error``), so the output is
always one valid document.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import click

from keep_sdk.cli._options import script_manifest
from keep_sdk.cli.support import (
    EXIT_PROBLEM,
    EXIT_USAGE,
    decode,
    fail,
    keep_version,
    loaded_plugins,
)
from keep_sdk.model import HostPolicy
from keep_sdk.validator import Report, render_json, render_sarif, render_text

__all__ = ["validate_command"]


@dataclass(frozen=True)
class _Script:
    name: str
    source: str


def _decode(data: bytes, name: str, lenient: bool) -> str:
    """UTF-8 text; with `lenient` (JSON and SARIF output) undecodable bytes are kept as lone
    surrogates for the validator to report, instead of exiting 2."""
    if lenient:
        return data.decode("utf-8-sig", "surrogateescape")
    return decode(data, name)


def _read(paths: tuple[str, ...], lenient: bool) -> list[_Script]:
    scripts: list[_Script] = []
    for given in paths:
        if given == "-":
            with click.open_file("-", "rb") as stream:
                data = stream.read()
            scripts.append(_Script("-", _decode(data, "standard input", lenient)))
            continue
        path = Path(given)
        if path.is_dir():
            found = sorted(p for p in path.rglob("*.js") if p.is_file())
            if not found:
                fail(f"{given} contains no .js files to validate", code=EXIT_USAGE)
        elif path.exists():
            found = [path]
        else:
            fail(f"{given} does not exist; give a .js file, a directory or -", code=EXIT_USAGE)
        for file in found:
            try:
                data = file.read_bytes()
            except OSError as exc:
                fail(f"cannot read {file}: {exc.strerror or exc}", code=EXIT_USAGE)
            scripts.append(_Script(str(file), _decode(data, str(file), lenient)))
    return scripts


def _summary(reports: list[Report]) -> str:
    errors = sum(len(r.errors) for r in reports)
    warnings = sum(len(r.warnings) for r in reports)
    failing = sum(1 for r in reports if r.errors)
    files = f"{len(reports)} file{'s' if len(reports) != 1 else ''}"
    if not errors and not warnings:
        return f"{files} checked: no problems found"
    counted = f"{errors} error{'s' if errors != 1 else ''}, {warnings} warning"
    counted += "s" if warnings != 1 else ""
    if errors:
        return f"{counted} ({failing} of {files} failed)"
    return f"{counted} in {files} (warnings do not fail the check)"


@click.command("validate")
@click.argument("paths", nargs=-1, required=True, metavar="PATH...")
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["text", "json", "sarif"]),
    default="text",
    show_default=True,
    help="text for people and LLMs, json (schema: docs/validator-report.schema.json), sarif 2.1.0.",
)
@click.option(
    "--mutate-reads",
    type=click.Choice(["none", "by_id"]),
    default="none",
    show_default=True,
    help='Host policy: "by_id" allows read-by-id operations in mutate.',
)
def validate_command(paths: tuple[str, ...], fmt: str, mutate_reads: str) -> None:
    """Check workflow scripts statically; exit 1 when any has an error.

    Scripts may call the registered connectors and those keep.toml configures
    (``keep --config PATH``, ``$KEEP_CONFIG``, ``keep.toml`` in the working folder or a
    parent, or ``.keep/keep.toml``; `keep config` says which).

    PATH is a .js file, a directory (every .js file in it, recursively) or -
    for standard input. Each problem is printed as file:line:column with the
    rule id, the source line and a hint on how to fix it.
    """
    scripts = _read(paths, lenient=fmt != "text")
    plugins = loaded_plugins()
    policy = HostPolicy.model_validate({"mutate_reads": mutate_reads})
    connectors = script_manifest(None)
    reports = [
        plugins.validate(script.source, policy=policy, filename=script.name, connectors=connectors)
        for script in scripts
    ]
    if fmt == "json":
        click.echo(render_json(reports))
    elif fmt == "sarif":
        click.echo(render_sarif(reports, plugins.rules(), version=keep_version()))
    else:
        for script, report in zip(scripts, reports, strict=True):
            if report.diagnostics:
                click.echo(render_text(report, script.source))
        click.echo(_summary(reports))
    if any(report.errors for report in reports):
        raise SystemExit(EXIT_PROBLEM)
