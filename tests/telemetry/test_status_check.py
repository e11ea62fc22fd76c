"""``keep status --check``: exit 1 when work waits and nothing progressed, else 0."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from keep_sdk.app import Installation
from keep_sdk.cli import cli
from keep_sdk.stores import Publication
from keep_sdk.telemetry import check_stalled

ROOT = Path(__file__).parents[2]
DEMO = ROOT / "fixtures" / "workflows" / "demo" / "invoices.js"
SAMPLE = DEMO.with_name("sample-data.json")
GRANTS = ("--grant", "gmail.read", "--grant", "sheets.write", "--grant", "slack.write")


def keep(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(cli, list(args))
    return result.exit_code, result.stdout, result.stderr


@pytest.fixture
def store(tmp_path: Path) -> str:
    url = f"sqlite:///{tmp_path / 'keep.db'}"
    code, out, err = keep(
        *("run", str(DEMO), "--store", url, "--seed", str(SAMPLE), *GRANTS),
        *("--until-idle", "--isolation", "in-process"),
    )
    assert code == 0, out + err
    return url


def _publish(store: str, count: int, *, topic: str = "invoice.received") -> None:
    inst = Installation.open(store, isolation="in-process")
    try:
        for n in range(count):
            inst.store.publish(
                "invoices",
                Publication(topic=topic, message_id=f"late-{n}", title=f"Late {n}", payload={}),
            )
    finally:
        inst.close()


def test_a_store_with_nothing_waiting_is_healthy(store: str) -> None:
    code, out, _ = keep("status", "--store", store, "--check", "--stalled-after", "0")
    assert code == 0
    assert out.startswith("healthy: nothing waits")


def test_waiting_work_without_progress_is_stalled(store: str) -> None:
    _publish(store, 2)
    code, out, _ = keep("status", "--store", store, "--check", "--stalled-after", "0")
    assert code == 1
    assert out.startswith("stalled: 2 pending event(s), ")
    code, out, _ = keep("status", "--store", store, "--check", "--json", "--stalled-after", "0")
    assert code == 1
    found = json.loads(out)
    assert found["stalled"] is True
    assert found["pending"] == 2


def test_waiting_work_that_just_arrived_is_not_stalled(store: str) -> None:
    _publish(store, 2)
    code, out, _ = keep("status", "--store", store, "--check", "--stalled-after", "3600")
    assert code == 0
    assert out.startswith("healthy: 2 pending event(s), ")


def test_stalled_by_the_clock(store: str) -> None:
    _publish(store, 1)
    inst = Installation.open(store, isolation="in-process")
    try:
        now = dt.datetime.now(dt.UTC)
        assert not check_stalled(inst.store, after_s=600, now=now).stalled
        assert check_stalled(inst.store, after_s=600, now=now + dt.timedelta(hours=1)).stalled
        inst.store.pause_workflow("invoices", actor="test")
        assert not check_stalled(inst.store, after_s=600, now=now + dt.timedelta(hours=1)).stalled
    finally:
        inst.close()


def test_a_missing_store_is_one_message(tmp_path: Path) -> None:
    code, _, err = keep("status", "--store", f"sqlite:///{tmp_path / 'none.db'}", "--check")
    assert code != 0
    assert "Traceback" not in err
