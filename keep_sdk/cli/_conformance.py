"""``keep conformance --store URL``: run the shipped store suite and print its summary."""

from __future__ import annotations

import click
from rich.table import Table

from keep_sdk.cli.outputs import SuiteOutput
from keep_sdk.cli.support import EXIT_PROBLEM, loaded_plugins, reports_errors
from keep_sdk.cli.text import console as text_console
from keep_sdk.cli.text import line, styled
from keep_sdk.conformance.store_suite import SuiteReport, run_store_suite
from keep_sdk.errors import ConfigurationError

__all__ = ["conformance_command"]


@click.command("conformance")
@click.option("--store", "store_url", required=True, metavar="URL", help="Store to certify.")
@click.option("-k", "selection", metavar="EXPR", help="Run only tests matching (pytest -k).")
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON.")
@reports_errors
def conformance_command(store_url: str, selection: str | None, as_json: bool) -> None:
    """Run the store conformance suite against the store at URL and print a summary.

    The suite writes workflows with fresh names; use a scratch database.
    Exits 1 when any test fails.
    """
    from keep_sdk.app import open_checked_store

    open_checked_store(store_url, plugins=loaded_plugins()).close()
    try:
        report = run_store_suite(store_url, selection=selection)
    except ConfigurationError as exc:
        raise click.ClickException(str(exc)) from None
    if as_json:
        click.echo(SuiteOutput.of(report).model_dump_json(indent=2, by_alias=True))
    else:
        _print_table(report)
    if not report.ok:
        raise SystemExit(EXIT_PROBLEM)


def _print_table(report: SuiteReport) -> None:
    console = text_console()
    table = Table(title=f"Store conformance: {report.store}")
    for column in ("area", "passed", "failed", "skipped"):
        table.add_column(column, justify="left" if column == "area" else "right")
    for area in report.areas:
        table.add_row(area.area, str(area.passed), str(area.failed), str(area.skipped))
    console.print(table)
    for name, message in report.failures.items():
        console.print(line(styled("FAILED", "red"), f" {name}: {message}"), soft_wrap=True)
