"""``keep conformance --store URL``: certify a store with the shipped store suite."""

from __future__ import annotations

import click
from rich.table import Table

from keep_sdk.cli.outputs import SuiteOutput
from keep_sdk.cli.support import EXIT_PROBLEM, loaded_plugins, reports_errors
from keep_sdk.cli.text import console as text_console
from keep_sdk.cli.text import line, styled
from keep_sdk.conformance.certificate import CapabilityStatus
from keep_sdk.conformance.store_suite import SuiteReport, run_store_suite
from keep_sdk.errors import ConfigurationError
from keep_sdk.stores import StoreCapability

__all__ = ["conformance_command"]

_STYLES = {
    CapabilityStatus.PASSED: "green",
    CapabilityStatus.FAILED: "red",
    CapabilityStatus.NOT_DECLARED: "dim",
    CapabilityStatus.NOT_RUN: "yellow",
}


@click.command("conformance")
@click.option("--store", "store_url", required=True, metavar="URL", help="Store to certify.")
@click.option(
    "--require",
    "required",
    multiple=True,
    type=click.Choice([c.value for c in StoreCapability]),
    help="A capability the store must pass; not declaring it fails (repeatable).",
)
@click.option("--thorough", is_flag=True, help="Load the large backlogs (100,000 events; minutes).")
@click.option("-k", "selection", metavar="EXPR", help="Run only tests matching (pytest -k).")
@click.option("--json", "as_json", is_flag=True, help="Print the certificate and report as JSON.")
@reports_errors
def conformance_command(
    store_url: str,
    required: tuple[str, ...],
    thorough: bool,
    selection: str | None,
    as_json: bool,
) -> None:
    """Certify the store at URL: run the tests of every capability it declares and print
    each capability passed, failed or not declared.

    The suite writes workflows with fresh names; use a scratch database. Exits 1 when
    a test fails or a required capability did not pass.
    """
    from keep_sdk.app import open_checked_store

    open_checked_store(store_url, plugins=loaded_plugins()).close()
    try:
        report = run_store_suite(
            store_url,
            selection=selection,
            required=[StoreCapability(c) for c in required],
            thorough=thorough,
        )
    except ConfigurationError as exc:
        raise click.ClickException(str(exc)) from None
    if as_json:
        click.echo(SuiteOutput.of(report).model_dump_json(indent=2, by_alias=True))
    else:
        _print_report(report)
    if not report.ok:
        raise SystemExit(EXIT_PROBLEM)


def _print_report(report: SuiteReport) -> None:
    console = text_console()
    certificate = Table(title=f"Store conformance certificate: {report.store}")
    for column in ("capability", "status", "passed", "failed", "skipped"):
        certificate.add_column(
            column, justify="left" if column in ("capability", "status") else "right"
        )
    for row in report.certificate.capabilities:
        status = row.status.value + (" (required)" if row.required else "")
        certificate.add_row(
            row.capability,
            styled(status, _STYLES[row.status]),
            str(row.passed),
            str(row.failed),
            str(row.skipped),
        )
    console.print(certificate)
    areas = Table(title="Tests by area")
    for column in ("area", "passed", "failed", "skipped"):
        areas.add_column(column, justify="left" if column == "area" else "right")
    for area in report.areas:
        areas.add_row(area.area, str(area.passed), str(area.failed), str(area.skipped))
    console.print(areas)
    for name, message in report.failures.items():
        console.print(line(styled("FAILED", "red"), f" {name}: {message}"), soft_wrap=True)
    for problem in report.certificate.problems:
        console.print(line(styled("NOT CERTIFIED", "red"), f" {problem}"), soft_wrap=True)
