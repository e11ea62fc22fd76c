"""keep deploy: validate once, deploy or leave unchanged, grant, run nothing; keep run
validates once too."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from click.testing import CliRunner

import keep_sdk.workflow
from keep_sdk.app import open_checked_store
from keep_sdk.cli import cli
from keep_sdk.cli.outputs import output_schema
from keep_sdk.conformance.postgres import PostgresServer
from keep_sdk.stores import Store

ROOT = Path(__file__).parents[2]
DEMO = ROOT / "fixtures" / "workflows" / "demo" / "invoices.js"
SAMPLE = ROOT / "fixtures" / "workflows" / "demo" / "sample-data.json"
NEEDED = ["gmail.read", "sheets.write", "slack.write"]


def keep(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(cli, list(args))
    return result.exit_code, result.stdout, result.stderr


@pytest.fixture
def store(tmp_path: Path) -> str:
    return f"sqlite:///{tmp_path / 'state' / 'keep.db'}"


@pytest.fixture
def validations(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The file name of every script validated in this process from now on."""
    seen: list[str] = []
    real: Callable[..., Any] = keep_sdk.workflow.load_workflow

    def counted(source: str, **options: Any) -> Any:
        seen.append(str(options.get("filename")))
        return real(source, **options)

    monkeypatch.setattr(keep_sdk.workflow, "load_workflow", counted)
    return seen


def opened(url: str) -> Store:
    return open_checked_store(url)


def test_deploy_stores_the_version_and_runs_nothing(store: str) -> None:
    code, out, err = keep("deploy", str(DEMO), "--store", store)
    assert code == 0, err
    assert "invoices deployed as version 1" in out
    state = opened(store)
    try:
        assert state.get_workflow("invoices").version == 1
        assert state.list_runs() == []
        assert state.active_runs() == []
    finally:
        state.close()


def test_deploying_the_same_script_again_leaves_its_version_unchanged(store: str) -> None:
    assert keep("deploy", str(DEMO), "--store", store)[0] == 0
    code, out, err = keep("deploy", str(DEMO), "--store", store)
    assert code == 0, err
    assert "version 1 unchanged" in out


def test_a_changed_script_becomes_the_next_version(store: str, tmp_path: Path) -> None:
    assert keep("deploy", str(DEMO), "--store", store)[0] == 0
    changed = tmp_path / "invoices.js"
    changed.write_text(DEMO.read_text() + "\n// a comment\n")
    code, out, err = keep("deploy", str(changed), "--store", store)
    assert code == 0, err
    assert "invoices deployed as version 2" in out


def test_grants_are_stored_and_what_is_still_missing_is_named(store: str) -> None:
    code, out, err = keep("deploy", str(DEMO), "--store", store, "--grant", "gmail.read")
    assert code == 0, err
    assert "granted: gmail.read" in out
    assert f"keep grant invoices sheets.write --store {store}" in out
    assert f"keep grant invoices slack.write --store {store}" in out


def test_json_names_the_version_the_grants_and_the_missing_permissions(store: str) -> None:
    code, out, err = keep(
        "deploy", str(DEMO), "--store", store, "--grant", "sheets.write", "--json"
    )
    assert code == 0, err
    document = json.loads(out)
    jsonschema.validate(document, output_schema("deploy"))
    assert document["workflow"] == "invoices"
    assert document["version"] == 1
    assert document["deployed"] is True
    assert document["granted"] == ["sheets.write"]
    assert document["grants"] == ["sheets.write"]
    assert document["needed"] == NEEDED
    assert document["missing"] == ["gmail.read", "slack.write"]


def test_a_second_deploy_with_every_grant_reports_nothing_missing(store: str) -> None:
    assert keep("deploy", str(DEMO), "--store", store, "--grant", "gmail.read")[0] == 0
    code, out, err = keep(
        "deploy", str(DEMO), "--store", store,
        "--grant", "sheets.write", "--grant", "slack.write", "--json",
    )  # fmt: skip
    assert code == 0, err
    document = json.loads(out)
    assert document["deployed"] is False
    assert document["grants"] == NEEDED
    assert document["missing"] == []


def test_a_permission_no_connector_declares_is_bad_usage_with_a_suggestion(store: str) -> None:
    code, _out, err = keep("deploy", str(DEMO), "--store", store, "--grant", "sheets.writ")
    assert code == 2
    assert "did you mean sheets.write?" in err
    state = opened(store)
    try:
        assert state.list_workflows() == []
    finally:
        state.close()


def test_a_script_with_errors_is_refused_with_the_report_and_no_store(tmp_path: Path) -> None:
    bad = tmp_path / "bad.js"
    bad.write_text(DEMO.read_text().replace('"row.added": {},', ""))
    store = f"sqlite:///{tmp_path / 'state' / 'keep.db'}"
    code, _out, err = keep("deploy", str(bad), "--store", store)
    assert code == 1
    assert "error[undeclared-topic]" in err
    assert "nothing was deployed" in err
    assert "Traceback" not in err
    assert not (tmp_path / "state").exists()


def test_deploy_validates_the_script_once(store: str, validations: list[str]) -> None:
    code, _out, err = keep("deploy", str(DEMO), "--store", store)
    assert code == 0, err
    assert validations == [str(DEMO)]


def test_run_validates_the_script_once(store: str, validations: list[str]) -> None:
    code, _out, err = keep(
        "run", str(DEMO), "--store", store, "--seed", str(SAMPLE), "--until-idle",
        "--isolation", "in-process",
        "--grant", "gmail.read", "--grant", "sheets.write", "--grant", "slack.write",
    )  # fmt: skip
    assert code == 0, err
    assert validations == [str(DEMO)]


def test_deploy_to_postgresql(postgres_server: PostgresServer) -> None:
    url = postgres_server.create_database("keep_deploy")
    code, out, err = keep("deploy", str(DEMO), "--store", url, "--grant", "gmail.read")
    assert code == 0, err
    assert "invoices deployed as version 1" in out
    assert keep("deploy", str(DEMO), "--store", url)[0] == 0
    state = opened(url)
    try:
        record = state.get_workflow("invoices")
        assert record.version == 1
        assert record.grants == ["gmail.read"]
        assert state.list_runs() == []
    finally:
        state.close()


def test_no_output_shows_the_store_password(postgres_server: PostgresServer) -> None:
    """The server trusts local connections, so the password in the URL is never checked;
    what matters is that no line of ``keep run`` or ``keep status`` (text or JSON) shows it."""
    url = postgres_server.create_database("keep_password")
    scheme, _, rest = url.partition("://")
    user, _, place = rest.partition("@")
    secret_url = f"{scheme}://{user}:n0t-for-eyes@{place}"
    ran = CliRunner().invoke(cli, ["run", str(DEMO), "--store", secret_url, "--until-idle"])
    status = CliRunner().invoke(cli, ["status", "--store", secret_url])
    as_json = CliRunner().invoke(cli, ["status", "--store", secret_url, "--json"])
    deployed = CliRunner().invoke(cli, ["deploy", str(DEMO), "--store", secret_url, "--json"])
    assert json.loads(deployed.stdout)["store"].startswith(f"{scheme}://{user}:***@")
    for result in (ran, status, as_json, deployed):
        assert "n0t-for-eyes" not in result.stdout + result.stderr, result.output
    assert f"{user}:***@" in ran.stdout + ran.stderr
    assert f"{user}:PASSWORD@" in status.stdout
    assert f"{user}:PASSWORD@" in as_json.stdout
