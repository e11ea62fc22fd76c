"""Kill a real process after every durable checkpoint of a consumer run; recover; check.

After restart recovery the run finishes correctly: the row exists exactly once,
the event is consumed, nothing is left active, and the ledger holds exactly one
applied entry for the chain.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from keep_sdk.connectors import ConnectorSet
from keep_sdk.connectors.builtin import Gmail, Sheets, Slack
from keep_sdk.model import EventStatus, LedgerStatus, RunStatus
from keep_sdk.plugins import KeepPlugins
from keep_sdk.runtime import Runtime
from keep_sdk.sandbox import InProcessIsolation
from keep_sdk.stores import Publication, open_store
from tests.runtime.harness import MAIL_TO_SHEET

CHILD = Path(__file__).with_name("crash_child.py")
POINTS = [
    "after:begin_consumer_run",
    "connector:crash_before_effect",
    "connector:crash_after_effect",
    "after:commit_applied_consumer_run",
]
"""The two checkpoints of a run whose mutation reconciles (sheets.appendRow), and the call
between them; a kill before every statement of each is test_statement_kills.py's."""


def _prepare(store_url: str, backing: Path) -> None:
    store = open_store(store_url)
    Sheets(backing=backing, seed={"spreadsheets": {"reports": {"rows": []}}})
    runtime = Runtime(
        store,
        ConnectorSet([Gmail(backing=backing), Sheets(backing=backing), Slack(backing=backing)]),
        load_workflow=KeepPlugins(load_entry_points=False).load_workflow,
        isolation=InProcessIsolation(),
    )
    runtime.deploy(MAIL_TO_SHEET)
    store.grant_permission("mail-to-sheet", "sheets.write", actor="test")
    store.publish(
        "mail-to-sheet",
        Publication(
            topic="email.received",
            message_id="m1",
            title="Email m1",
            payload={"from": "a@example.com", "subject": "Hi"},
        ),
    )
    store.close()


def _settle(runtime: Runtime) -> None:
    """What the scheduler does after a restart, until there is nothing left to do."""
    runtime.recover()
    for _ in range(10):
        for entry in runtime.store.due_reconciliations(None):
            runtime.reconcile(entry.id)
        for paused in runtime.store.list_runs(status=RunStatus.PAUSED_TRANSIENT):
            runtime.resume(paused.id)
        if not runtime.store.pending_events("mail-to-sheet", "email.received", limit=1):
            return
        runtime.run_consumer("mail-to-sheet", "appendRow")


def _crash_and_recover(store_url: str, backing: Path, point: str) -> None:
    _prepare(store_url, backing)
    child = subprocess.run(
        [sys.executable, str(CHILD), store_url, str(backing), point],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        cwd=Path(__file__).parents[2],
    )
    assert child.returncode == -9, f"child was not killed at {point}: {child.stderr}"

    store = open_store(store_url)
    sheets = Sheets(backing=backing)
    runtime = Runtime(
        store,
        ConnectorSet([Gmail(backing=backing), sheets, Slack(backing=backing)]),
        load_workflow=KeepPlugins(load_entry_points=False).load_workflow,
        isolation=InProcessIsolation(),
    )
    _settle(runtime)

    assert len(sheets.effects("appendRow")) == 1, point
    events = store.list_events("mail-to-sheet", topic="email.received")
    assert [e.status for e in events] == [EventStatus.CONSUMED], point
    runs = store.list_runs(workflow="mail-to-sheet")
    assert not [r for r in runs if r.status is RunStatus.ACTIVE], point
    assert RunStatus.COMMITTED in {r.status for r in runs}
    applied = store.list_ledger(status=LedgerStatus.APPLIED)
    assert len(applied) == 1, point
    store.close()


@pytest.mark.slow
@pytest.mark.parametrize("point", POINTS)
def test_sqlite_crash_point(tmp_path: Path, point: str) -> None:
    _crash_and_recover(f"sqlite:///{tmp_path / 'keep.db'}", tmp_path / "doubles.db", point)


@pytest.mark.slow
@pytest.mark.postgres
@pytest.mark.parametrize("point", POINTS)
def test_postgres_crash_point(fresh_postgres_url: str, tmp_path: Path, point: str) -> None:
    _crash_and_recover(fresh_postgres_url, tmp_path / "doubles.db", point)
