"""keep run / worker / status / events / runs / ledger / skip / resolve / pause / resume / grant."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from click.testing import CliRunner

from keep_sdk.app import Installation, load_seed
from keep_sdk.cli import cli
from keep_sdk.cli.outputs import StatusOutput
from keep_sdk.connectors.builtin import FaultKind, ServiceDouble, Sheets
from keep_sdk.model import LedgerStatus, RunStatus
from keep_sdk.scheduler import Scheduler
from keep_sdk.stores import Publication

ROOT = Path(__file__).parents[2]
DEMO = ROOT / "fixtures" / "workflows" / "demo" / "invoices.js"
SAMPLE = ROOT / "fixtures" / "workflows" / "demo" / "sample-data.json"
ALL_GRANTS = ("--grant", "gmail.read", "--grant", "sheets.write", "--grant", "slack.write")


def keep(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(cli, list(args))
    return result.exit_code, result.stdout, result.stderr


@pytest.fixture
def store(tmp_path: Path) -> str:
    return f"sqlite:///{tmp_path / 'state' / 'keep.db'}"


def run_demo(store: str, *extra: str) -> tuple[int, str, str]:
    return keep(
        "run",
        str(DEMO),
        "--store",
        store,
        "--seed",
        str(SAMPLE),
        "--until-idle",
        "--isolation",
        "in-process",
        *extra,
    )


def status(store: str) -> StatusOutput:
    code, out, err = keep("status", "--store", store, "--json")
    assert code == 0, err
    return StatusOutput.model_validate_json(out)


def test_the_demo_runs_in_the_users_terms(store: str, tmp_path: Path) -> None:
    code, out, err = run_demo(store, *ALL_GRANTS)
    assert code == 0, err
    assert "invoices deployed as version 1" in out
    assert "Add invoice from billing@acme-hosting.example (1,250.00 EUR) to the sheet: done" in out
    assert "Post a summary of 3 new invoices to #finance: done" in out
    assert "Nothing waits for you." in out
    rows = Sheets(backing=tmp_path / "state" / "doubles.db").snapshot()["spreadsheets"]
    assert [r["values"][1] for r in rows["invoices"]["rows"]] == [
        "billing@acme-hosting.example",
        "accounts@paper-supply.example",
        "ap@cloud-db.example",
    ]
    [workflow] = status(store).workflows
    assert [i.title for i in workflow.inputs][:1] == [
        'Email from billing@acme-hosting.example: "Invoice INV-2211 for November"'
    ]
    assert {i.topic for i in workflow.inputs} == {"invoice.received"}
    assert [o.status for o in workflow.outputs] == ["applied"] * 4
    assert workflow.outputs[-1].title == "Post a summary of 3 new invoices to #finance"
    assert workflow.waiting == []
    assert workflow.runs == {"committed": 5}


def test_running_an_unchanged_script_again_deploys_nothing_and_adds_nothing(store: str) -> None:
    assert run_demo(store, *ALL_GRANTS)[0] == 0
    code, out, _ = keep(
        "run", str(DEMO), "--store", store, "--until-idle", "--isolation", "in-process"
    )
    assert code == 0
    assert "unchanged (version 1)" in out
    [workflow] = status(store).workflows
    assert len(workflow.outputs) == 4


def test_run_json_is_machine_readable(store: str) -> None:
    code, out, _ = run_demo(store, *ALL_GRANTS, "--json")
    assert code == 0
    document = json.loads(out)
    assert document["deployed"] is True
    assert len(document["activities"]) == 5
    StatusOutput.model_validate(document["status"])


def test_a_script_with_errors_is_refused_with_its_diagnostics(store: str, tmp_path: Path) -> None:
    bad = tmp_path / "bad.js"
    bad.write_text(DEMO.read_text().replace('"row.added": {},', ""))
    code, _out, err = keep("run", str(bad), "--store", store, "--until-idle")
    assert code == 1
    assert "error[undeclared-topic]" in err
    assert "nothing was deployed" in err
    assert "Traceback" not in err
    assert not (tmp_path / "state").exists()


def test_a_missing_permission_waits_for_a_grant(store: str) -> None:
    code, out, _ = run_demo(store, "--grant", "gmail.read", "--grant", "slack.write")
    assert code == 0
    [workflow] = status(store).workflows
    [waiting] = workflow.waiting
    assert waiting.needs_person
    assert waiting.commands == [f"keep grant invoices sheets.write --store {store}"]
    assert "sheets.write" in waiting.why
    code, out, err = keep(
        "grant", "invoices", "sheets.write", "--store", store, "--isolation", "in-process"
    )
    assert code == 0, err
    assert "granted sheets.write to invoices" in out
    assert "is now committed" in out
    keep("run", str(DEMO), "--store", store, "--until-idle", "--isolation", "in-process")
    [workflow] = status(store).workflows
    assert workflow.waiting == []
    assert [o.status for o in workflow.outputs] == ["applied"] * 4


def test_events_runs_and_ledger_list_as_tables_and_json(store: str) -> None:
    run_demo(store, *ALL_GRANTS)
    code, out, _ = keep("events", "--store", store, "--json", "--status", "consumed")
    assert code == 0
    assert len(json.loads(out)) == 6
    code, out, _ = keep("runs", "--store", store, "--json", "--limit", "2")
    assert [r["handler"] for r in json.loads(out)] == ["addRow", "postSummary"]
    code, out, _ = keep("ledger", "--store", store, "--json", "--workflow", "invoices")
    assert [e["status"] for e in json.loads(out)] == ["applied"] * 4
    for command in ("events", "runs", "ledger", "status"):
        code, out, err = keep(command, "--store", store)
        assert code == 0, err
        assert "invoices" in out or "Email from" in out


def test_skip_pause_and_resume(store: str) -> None:
    run_demo(store, *ALL_GRANTS)
    assert keep("pause", "invoices", "--store", store)[1] == (
        "paused invoices; runs already waiting stay as they are\n"
    )
    inst = Installation.open(store, isolation="in-process")
    try:
        published = inst.store.publish(
            "invoices",
            Publication(
                topic="invoice.received",
                message_id="late",
                title="Late invoice",
                payload={
                    "from": "x@y",
                    "subject": "s",
                    "amount": "1 EUR",
                    "receivedAt": "2026-11-22T10:00:00Z",
                },
            ),
        )
    finally:
        inst.close()
    [workflow] = status(store).workflows
    assert workflow.paused
    assert workflow.waiting[0].commands == [f"keep resume invoices --store {store}"]
    code, out, _ = keep("skip", published.event.id, "--store", store, "--reason", "duplicate")
    assert code == 0
    assert out == f"skipped 'Late invoice' ({published.event.id}); it will not be delivered\n"
    code, _, err = keep("skip", published.event.id, "--store", store)
    assert code == 1
    assert err.startswith("error: ")
    assert "Traceback" not in err
    assert keep("resume", "invoices", "--store", store)[0] == 0
    assert not status(store).workflows[0].paused


def _escalate(store: str) -> str:
    """The demo, with the chat post timing out: nobody can know whether it was posted."""
    inst = Installation.open(store, isolation="in-process")
    try:
        inst.runtime.deploy(DEMO.read_text(), name="escalating")
        for permission in ("gmail.read", "sheets.write", "slack.write"):
            inst.store.grant_permission("escalating", permission, actor="test")
        inst.seed(load_seed(SAMPLE))
        slack = inst.connectors["slack"]
        assert isinstance(slack, ServiceDouble)
        slack.faults.inject(FaultKind.TIMEOUT_BEFORE_EFFECT, operation="postMessage")
        Scheduler(inst.runtime).run_until_idle()
        [run] = inst.store.list_runs(status=RunStatus.PAUSED_RECONCILIATION)
        return run.id
    finally:
        inst.close()


def test_resolve_an_escalated_run(store: str) -> None:
    run_id = _escalate(store)
    waiting = next(w for w in status(store).workflows if w.name == "escalating").waiting
    assert waiting[0].commands == [
        f"keep resolve {run_id} --happened --result JSON --store {store}",
        f"keep resolve {run_id} --didnt-happen --store {store}",
        f"keep resolve {run_id} --skip --store {store}",
    ]
    code, _, err = keep("resolve", run_id, "--store", store)
    assert code == 2
    assert "choose one of" in err
    code, _, err = keep("resolve", run_id, "--retry", "--store", store, "--isolation", "in-process")
    assert code == 1
    assert "cannot be reconciled" in err
    code, out, err = keep(
        "resolve", run_id, "--didnt-happen", "--store", store, "--isolation", "in-process"
    )
    assert code == 0, err
    assert "is committed" in out
    inst = Installation.open(store, isolation="in-process")
    try:
        statuses = [e.status for e in inst.store.list_ledger(workflow="escalating")]
        assert statuses[-2:] == [LedgerStatus.FAILED, LedgerStatus.APPLIED]
    finally:
        inst.close()
    code, _, err = keep("resolve", run_id, "--skip", "--store", store, "--isolation", "in-process")
    assert code == 1
    assert "only a run paused for reconciliation" in err


@pytest.mark.parametrize("lanes", [(), ("--concurrency", "3")])
def test_worker_until_idle_in_a_real_process(
    store: str, tmp_path: Path, lanes: tuple[str, ...]
) -> None:
    code, _, _ = keep(
        "run",
        str(DEMO),
        "--store",
        store,
        "--seed",
        str(SAMPLE),
        *ALL_GRANTS,
        "--until-idle",
        "--isolation",
        "in-process",
    )
    assert code == 0
    inst = Installation.open(store, isolation="in-process")
    try:
        inst.store.publish(
            "invoices",
            Publication(
                topic="invoice.received",
                message_id="extra",
                title="Extra invoice",
                payload={
                    "from": "z@z",
                    "subject": "s",
                    "amount": "5 EUR",
                    "receivedAt": "2026-11-22T10:00:00Z",
                },
            ),
        )
    finally:
        inst.close()
    done = subprocess.run(
        [sys.executable, "-m", "keep_sdk", "worker", "--store", store, "--until-idle", *lanes],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert ("3 workflows at once" in done.stderr) == bool(lanes), done.stderr
    assert "Add invoice from z@z (5 EUR) to the sheet: done" in done.stdout
    assert "Post a summary of 1 new invoice to #finance: done" in done.stdout


def test_every_command_is_documented() -> None:
    text = (ROOT / "docs" / "cli.md").read_text()
    for name in (
        "run",
        "worker",
        "status",
        "events",
        "runs",
        "ledger",
        "skip",
        "resolve",
        "pause",
        "resume",
        "grant",
    ):
        assert f"keep {name}" in text, name
    assert (ROOT / "docs" / "scheduler.md").exists()


def test_run_without_until_idle_keeps_running_until_sigterm(store: str) -> None:
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "keep_sdk",
            "run",
            str(DEMO),
            "--store",
            store,
            "--seed",
            str(SAMPLE),
            *ALL_GRANTS,
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            workflows = status(store).workflows if Path(store[10:]).exists() else []
            if workflows and len(workflows[0].outputs) == 4:
                break
            time.sleep(0.2)
        assert process.poll() is None, "keep run should keep running"
    finally:
        process.send_signal(signal.SIGTERM)
        out, err = process.communicate(timeout=60)
    assert process.returncode == 0, err
    assert "Ctrl-C to stop" in out
    assert "Post a summary of 3 new invoices" in out
