"""``keep conformance --store URL``: run the shipped store suite through pytest, summarise it."""

from __future__ import annotations

import importlib.util
import json
import re
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET
from collections import Counter
from pathlib import Path

import click
from pydantic import BaseModel, ConfigDict
from rich.console import Console
from rich.table import Table

from keep_sdk.console import EXIT_PROBLEM, reports_errors

__all__ = ["AreaSummary", "SuiteReport", "conformance_command", "run_store_suite"]

SUITE = "keep_sdk.conformance.stores.at_url"


class AreaSummary(BaseModel):
    """Outcomes of the tests of one suite area (one mixin)."""

    model_config = ConfigDict(frozen=True)

    area: str
    passed: int = 0
    failed: int = 0
    skipped: int = 0


class SuiteReport(BaseModel):
    """What a run of the store suite found."""

    model_config = ConfigDict(frozen=True)

    store: str
    areas: list[AreaSummary]
    failures: dict[str, str]
    exit_code: int

    @property
    def ok(self) -> bool:
        return self.exit_code == 0 and not self.failures


def _without_password(url: str) -> str:
    return re.sub(r"://([^:/@]+):[^@/]*@", r"://\1:***@", url)


def _areas() -> dict[str, str]:
    from keep_sdk.conformance.stores import StoreConformance

    found: dict[str, str] = {}
    for cls in reversed(StoreConformance.__mro__):
        for name in vars(cls):
            if name.startswith("test_"):
                found[name] = cls.__name__.removesuffix("Tests")
    return found


def run_store_suite(store_url: str, *, selection: str | None = None) -> SuiteReport:
    """Run the store suite against `store_url` in a pytest subprocess and collect outcomes."""
    if importlib.util.find_spec("pytest") is None:
        raise click.ClickException(
            "the conformance suite runs on pytest, which is not installed; "
            "install it (pip install 'keep-sdk[conformance]') and run the command again"
        )
    areas = _areas()
    counts: dict[str, Counter[str]] = {}
    failures: dict[str, str] = {}
    with tempfile.TemporaryDirectory(prefix="keep-conformance-") as workdir:
        ini = Path(workdir, "pytest.ini")
        ini.write_text("[pytest]\n")
        report = Path(workdir, "report.xml")
        command = [
            sys.executable, "-m", "pytest", "--pyargs", SUITE,
            "-c", str(ini), "--rootdir", workdir, "-p", "no:cacheprovider", "-q",
            "--keep-store-url", store_url, f"--junitxml={report}",
        ]  # fmt: skip
        if selection:
            command += ["-k", selection]
        done = subprocess.run(command, cwd=workdir, capture_output=True, text=True, check=False)
        if not report.exists():
            raise click.ClickException(
                f"pytest did not run the suite (exit {done.returncode}): "
                f"{(done.stderr or done.stdout).strip()[-2000:]}"
            )
        for case in ET.parse(report).getroot().iter("testcase"):
            name = case.get("name", "?").split("[", 1)[0]
            area = areas.get(name, "Other")
            outcome = "passed"
            for child in case:
                if child.tag in ("failure", "error"):
                    outcome = "failed"
                    failures[name] = (child.get("message") or child.text or "").strip()[:500]
                elif child.tag == "skipped":
                    outcome = "skipped"
            counts.setdefault(area, Counter())[outcome] += 1
    summaries = [
        AreaSummary(area=area, passed=c["passed"], failed=c["failed"], skipped=c["skipped"])
        for area, c in sorted(counts.items())
    ]
    return SuiteReport(
        store=_without_password(store_url),
        areas=summaries,
        failures=failures,
        exit_code=done.returncode,
    )


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
    from keep_sdk.stores import open_store

    open_store(store_url).close()
    report = run_store_suite(store_url, selection=selection)
    if as_json:
        click.echo(json.dumps(report.model_dump(), indent=2))
    else:
        console = Console()
        table = Table(title=f"Store conformance: {report.store}")
        for column in ("area", "passed", "failed", "skipped"):
            table.add_column(column, justify="left" if column == "area" else "right")
        for area in report.areas:
            table.add_row(area.area, str(area.passed), str(area.failed), str(area.skipped))
        console.print(table)
        for name, message in report.failures.items():
            console.print(f"[red]FAILED[/red] {name}: {message}", markup=True, highlight=False)
    if not report.ok:
        raise SystemExit(EXIT_PROBLEM)
