"""Every shipped ``*.keep.yaml`` passes under ``keep test``, and the published schema is
the model's."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from keep_sdk.cases import schema_of

ROOT = Path(__file__).parents[2]
SHIPPED = sorted(p for folder in ("fixtures", "docs") for p in (ROOT / folder).rglob("*.keep.yaml"))


def test_the_demo_and_the_durable_workflow_ship_case_files() -> None:
    names = {p.relative_to(ROOT).as_posix() for p in SHIPPED}
    assert "fixtures/workflows/demo/invoices.keep.yaml" in names
    assert "fixtures/workflows/durable/onboarding.keep.yaml" in names


def test_the_durable_tutorial_ships_the_workflow_and_its_case_file() -> None:
    from docsgen.fences import blocks

    page = (ROOT / "docs" / "tutorials" / "durable.md").read_text()
    files = {b.path: b.text for b in blocks(page) if b.action == "file"}
    for name in ("onboarding.js", "onboarding.keep.yaml"):
        assert files[name] == (ROOT / "fixtures/workflows/durable" / name).read_text()
    assert "keep test onboarding.keep.yaml" in page


def test_the_durable_case_file_exercises_what_the_issue_asks_for() -> None:
    text = (ROOT / "fixtures/workflows/durable/onboarding.keep.yaml").read_text()
    for needed in (
        "approved: true",
        "approved: false",
        "failing:",
        "cron",
        "wakeAt",
        "- clock:",
        "- poll:",
        "- notify:",
        "paused:timeout",
    ):
        assert (
            needed in text
            or needed in (ROOT / "fixtures/workflows/durable/onboarding.js").read_text()
        ), needed


@pytest.mark.parametrize("path", SHIPPED, ids=[p.parent.name + "/" + p.name for p in SHIPPED])
def test_keep_test_passes_on_a_shipped_case_file(path: Path, tmp_path: Path) -> None:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    env.pop("KEEP_CONFIG", None)
    done = subprocess.run(
        [sys.executable, "-m", "keep_sdk", "test", str(path)],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env=env,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert " 0 failed" in done.stdout


def test_the_committed_json_schema_is_the_models() -> None:
    committed = json.loads((ROOT / "docs" / "keep-case.schema.json").read_text())
    assert committed == schema_of("keep-case")


def test_keep_schema_prints_the_case_file_model() -> None:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run(
        [sys.executable, "-m", "keep_sdk", "schema", "keep-case"],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
        check=True,
    )
    schema = json.loads(done.stdout)
    assert set(schema["properties"]) == {
        "workflow",
        "grants",
        "connectors",
        "live",
        "start",
        "cases",
    }
    assert set(schema["$defs"]["StandInSeed"]["properties"]) == {"answers", "results"}
    step = schema["$defs"]["Step"]["properties"]
    assert {"clock", "poll", "notify", "seed", "advance", "wait"} <= set(step)
