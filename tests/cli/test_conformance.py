"""`keep conformance --store URL` runs the suite in pytest and prints a summary."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from keep_sdk.cli import cli
from keep_sdk.conformance.store_suite import _without_password, run_store_suite
from keep_sdk.conformance.stores import LeaseTests
from keep_sdk.errors import ConfigurationError


@pytest.mark.slow  # 4-5 s on an idle machine: the Lease area, racing processes included
def test_conformance_prints_a_json_report_per_area(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path}/keep.db"
    result = CliRunner().invoke(cli, ["conformance", "--store", url, "-k", "lease", "--json"])
    assert result.exit_code == 0, result.output
    report = json.loads(result.output)
    assert report["store"] == url
    assert report["failures"] == {}
    areas = {a["area"]: a for a in report["areas"]}
    lease_tests = [n for n in dir(LeaseTests) if n.startswith("test_") and "lease" in n]
    assert len(lease_tests) >= 8
    assert areas["Lease"]["passed"] == len(lease_tests)
    assert areas["Lease"]["failed"] == 0


def test_conformance_prints_a_table(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path}/keep.db"
    result = CliRunner().invoke(cli, ["conformance", "--store", url, "-k", "heartbeat"])
    assert result.exit_code == 0, result.output
    assert "Store conformance" in result.output
    assert "Lease" in result.output


def test_a_selection_that_runs_nothing_is_not_a_pass() -> None:
    report = run_store_suite("memory://", selection="test_does_not_exist_anywhere")
    assert report.areas == []
    assert report.exit_code == 5
    assert not report.ok


def test_the_report_hides_passwords() -> None:
    assert (
        _without_password("postgresql://keep:s3cret@db:5432/k") == "postgresql://keep:***@db:5432/k"
    )


def test_an_unknown_scheme_is_one_clear_error() -> None:
    result = CliRunner().invoke(cli, ["conformance", "--store", "nosuch://x"])
    assert result.exit_code == 1
    assert "no store is registered for the URL scheme 'nosuch'" in result.output
    assert "Traceback" not in result.output


def test_the_store_option_is_required() -> None:
    assert CliRunner().invoke(cli, ["conformance"]).exit_code == 2


def test_without_pytest_the_suite_is_refused_with_a_hint(monkeypatch: pytest.MonkeyPatch) -> None:
    from keep_sdk.conformance import store_suite

    real = store_suite.importlib.util.find_spec
    monkeypatch.setattr(
        store_suite.importlib.util,
        "find_spec",
        lambda name, *args: None if name == "pytest" else real(name, *args),
    )
    with pytest.raises(ConfigurationError, match="install it"):
        run_store_suite("memory://")
    result = CliRunner().invoke(cli, ["conformance", "--store", "memory://"])
    assert result.exit_code == 1
    assert "Error: the conformance suite runs on pytest" in result.output
