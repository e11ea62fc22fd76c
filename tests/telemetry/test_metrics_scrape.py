"""``keep worker --metrics-port`` serves /metrics and /healthz while it works (issue 31)."""

from __future__ import annotations

import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner
from prometheus_client.parser import text_string_to_metric_families
from prometheus_client.samples import Sample

from keep_sdk.app import Installation
from keep_sdk.cli import cli
from keep_sdk.stores import Publication
from keep_sdk.telemetry import KeepMetrics

ROOT = Path(__file__).parents[2]
DEMO = ROOT / "fixtures" / "workflows" / "demo" / "invoices.js"
SAMPLE = ROOT / "fixtures" / "workflows" / "demo" / "sample-data.json"
GRANTS = ("--grant", "gmail.read", "--grant", "sheets.write", "--grant", "slack.write")
EXTRA = 3


def _scrape(url: str) -> dict[str, list[Sample]]:
    with urllib.request.urlopen(url, timeout=10) as response:
        text = response.read().decode()
    return {family.name: family.samples for family in text_string_to_metric_families(text)}


def _value(samples: list[Sample], name: str, **labels: str) -> float:
    return sum(s.value for s in samples if s.name == name and labels.items() <= s.labels.items())


def _publish_extra(store: str) -> None:
    inst = Installation.open(store, isolation="in-process")
    try:
        for n in range(EXTRA):
            inst.store.publish(
                "invoices",
                Publication(
                    topic="invoice.received",
                    message_id=f"extra-{n}",
                    title=f"Extra invoice {n}",
                    payload={
                        "from": f"x{n}@example.com",
                        "subject": "s",
                        "amount": "5 EUR",
                        "receivedAt": "2026-11-22T10:00:00Z",
                    },
                ),
            )
        families = {
            f.name: f.samples
            for f in text_string_to_metric_families(KeepMetrics(inst.store).render().decode())
        }
        pending = families["keep_events_pending"]
        assert _value(pending, "keep_events_pending", topic="invoice.received") == EXTRA
    finally:
        inst.close()


@pytest.fixture
def store(tmp_path: Path) -> str:
    url = f"sqlite:///{tmp_path / 'keep.db'}"
    result = CliRunner().invoke(
        cli,
        [
            *("run", str(DEMO), "--store", url, "--seed", str(SAMPLE), *GRANTS),
            *("--until-idle", "--isolation", "in-process"),
        ],
    )
    assert result.exit_code == 0, result.output
    return url


@pytest.fixture
def worker(store: str) -> Iterator[tuple[subprocess.Popen[str], str]]:
    _publish_extra(store)
    process = subprocess.Popen(
        [
            *(sys.executable, "-m", "keep_sdk", "worker", "--store", store),
            *("--isolation", "in-process", "--poll", "0.2", "--metrics-port", "0"),
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert process.stderr is not None
        base = ""
        for line in process.stderr:
            if line.startswith("metrics on "):
                base = line.split()[-1].removesuffix("/metrics")
                break
        assert base, "the worker did not say where its metrics are"
        yield process, base
    finally:
        process.send_signal(signal.SIGTERM)
        process.communicate(timeout=60)
    assert process.returncode == 0


def test_scrape_during_a_worker_run_finds_every_metric(
    worker: tuple[subprocess.Popen[str], str],
) -> None:
    _, base = worker
    deadline = time.monotonic() + 120
    families: dict[str, list[Sample]] = {}
    while time.monotonic() < deadline:
        families = _scrape(f"{base}/metrics")
        committed = families.get("keep_run_transitions", [])
        if _value(committed, "keep_run_transitions_total", status="committed") >= EXTRA:
            break
        time.sleep(0.3)
    transitions = families["keep_run_transitions"]
    assert _value(transitions, "keep_run_transitions_total", status="committed") >= EXTRA
    latency = families["keep_run_latency_seconds"]
    assert _value(latency, "keep_run_latency_seconds_count", workflow="invoices") >= EXTRA
    assert 0 <= _value(latency, "keep_run_latency_seconds_sum") < 600
    phases = families["keep_phase_duration_seconds"]
    for phase in ("prepare", "mutate", "next"):
        assert _value(phases, "keep_phase_duration_seconds_count", phase=phase) >= EXTRA, phase
    runs = families["keep_runs"]
    assert _value(runs, "keep_runs", workflow="invoices", status="committed") >= EXTRA + 1
    assert "keep_parked_runs" in families
    assert _value(families["keep_parked_runs"], "keep_parked_runs") == 0
    assert "keep_reconcile_rounds" in families
    assert _value(families["keep_store_errors"], "keep_store_errors_total") == 0
    assert _value(families["keep_store_up"], "keep_store_up") == 1
    assert _value(families["keep_work_due"], "keep_work_due") >= 0
    progress = families["keep_last_progress_timestamp_seconds"]
    progressed = _value(progress, "keep_last_progress_timestamp_seconds")
    assert abs(progressed - time.time()) < 120
    newest = families["keep_last_run_change_timestamp_seconds"]
    assert abs(_value(newest, "keep_last_run_change_timestamp_seconds") - time.time()) < 300
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        pending = _scrape(f"{base}/metrics")["keep_events_pending"]
        if _value(pending, "keep_events_pending", topic="invoice.received") == 0:
            break
        time.sleep(0.3)
    assert _value(pending, "keep_events_pending", topic="invoice.received") == 0


def test_healthz_answers_while_the_loop_progresses(
    worker: tuple[subprocess.Popen[str], str],
) -> None:
    _, base = worker
    deadline = time.monotonic() + 60
    status = 0
    while time.monotonic() < deadline:
        try:
            with urllib.request.urlopen(f"{base}/healthz", timeout=10) as response:
                status = response.status
                break
        except urllib.error.HTTPError as exc:
            status = exc.code
            exc.close()
            time.sleep(0.2)
    assert status == 200
    with pytest.raises(urllib.error.HTTPError) as missing:
        urllib.request.urlopen(f"{base}/nothing", timeout=10)
    assert missing.value.code == 404
    missing.value.close()


def test_a_port_in_use_is_one_clear_message(store: str, tmp_path: Path) -> None:
    import socket

    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        done = subprocess.run(
            [
                *(sys.executable, "-m", "keep_sdk", "worker", "--store", store),
                *("--until-idle", "--metrics-port", str(port)),
            ],
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
    assert done.returncode == 2
    assert f"cannot serve metrics on 127.0.0.1:{port}" in done.stderr
    assert "Traceback" not in done.stderr
