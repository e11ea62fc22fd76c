"""Issue 17, defect 5: grants are checked against what the connectors declare; keep revoke."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.cli.terminal import ALL_GRANTS, DEMO, keep, run_demo


@pytest.mark.parametrize(
    ("typo", "meant"),
    [("sheet.wrte", "sheets.write"), ("gmial.send", "gmail.send"), ("slack.writ", "slack.write")],
)
def test_a_grant_nobody_declares_is_refused_with_a_did_you_mean(
    tmp_path: Path, typo: str, meant: str
) -> None:
    store = f"sqlite:///{tmp_path / 'keep.db'}"
    assert run_demo(store, *ALL_GRANTS).code == 0
    done = keep("grant", "invoices", typo, "--store", store, "--isolation", "in-process")
    assert done.code == 2
    assert f"did you mean {meant}?" in done.err
    assert "Traceback" not in done.err
    [workflow] = json.loads(keep("status", "--store", store, "--json").out)["workflows"]
    assert typo not in workflow["grants"]


def test_keep_run_refuses_a_misspelt_grant_before_deploying(tmp_path: Path) -> None:
    store = f"sqlite:///{tmp_path / 'keep.db'}"
    done = keep(
        "run", str(DEMO), "--store", store, "--grant", "gmial.send", "--until-idle",
        "--isolation", "in-process",
    )  # fmt: skip
    assert done.code == 2
    assert "did you mean gmail.send?" in done.err
    assert keep("status", "--store", store, "--json").out.count('"name"') == 0


def test_revoke_takes_a_permission_back(tmp_path: Path) -> None:
    store = f"sqlite:///{tmp_path / 'keep.db'}"
    assert run_demo(store, *ALL_GRANTS).code == 0
    done = keep("revoke", "invoices", "slack.write", "--store", store)
    assert done.code == 0, done.err
    assert done.out == "revoked slack.write from invoices; it keeps: gmail.read, sheets.write\n"
    [workflow] = json.loads(keep("status", "--store", store, "--json").out)["workflows"]
    assert sorted(workflow["grants"]) == ["gmail.read", "sheets.write"]
    again = keep("revoke", "invoices", "slack.write", "--store", store)
    assert again.code == 1
    assert "never granted" in again.err
    as_json = keep("revoke", "invoices", "gmail.read", "--store", store, "--json")
    assert json.loads(as_json.out)["grants"] == ["sheets.write"]
