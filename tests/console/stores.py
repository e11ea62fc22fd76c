"""Stores the console tests look at: a run waiting for a permission, a run nobody can tell
whether its change happened, made by the real ``keep run`` on SQLite."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from keep_sdk.app import Installation
from tests.cli.terminal import DEMO, SAMPLE, keep

TOKEN = "console-test-token-0123456789"


@dataclass(frozen=True)
class Prepared:
    """A store with workflow `waiting` (its addRow run waits for sheets.write) and workflow
    `escalated` (its postSummary run is paused: the chat post timed out)."""

    url: str
    approval_run: str
    escalated_run: str


def _one(url: str, status: str) -> str:
    done = keep("runs", "--store", url, "--json", "--status", status)
    assert done.code == 0, done.err
    [run] = json.loads(done.out)
    return str(run["id"])


def prepare(folder: Path) -> Prepared:
    """Both workflows in one SQLite store under `folder` (their doubles in doubles.db)."""
    url = f"sqlite:///{folder / 'keep.db'}"
    seed = json.loads(SAMPLE.read_text())
    seed["faults"] = [
        {"connector": "slack", "operation": "postMessage", "kind": "timeout_before_effect"}
    ]
    seed_file = folder / "seed.json"
    seed_file.write_text(json.dumps(seed))
    common = ("--store", url, "--until-idle", "--isolation", "in-process")
    done = keep(
        "run", str(DEMO), *common, "--name", "escalated", "--seed", str(seed_file),
        "--grant", "gmail.read", "--grant", "sheets.write", "--grant", "slack.write",
    )  # fmt: skip
    assert done.code == 0, done.err
    escalated = _one(url, "paused:reconciliation")
    done = keep(
        "run", str(DEMO), *common, "--name", "waiting", "--grant", "gmail.read",
        "--grant", "slack.write",
    )  # fmt: skip
    assert done.code == 0, done.err
    return Prepared(url, _one(url, "paused:approval"), escalated)


def opened(url: str) -> Installation:
    """The installation at `url`, in-process (close it)."""
    return Installation.open(url, isolation="in-process", must_exist=True)
