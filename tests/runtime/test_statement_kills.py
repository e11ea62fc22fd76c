"""SIGKILL a real process just before each write statement and each transaction of a
consumer run (counted below the store by SQLAlchemy's engine events), then recover.

Whatever statement the kill lands on, recovery leaves the row written exactly once,
the event consumed, one applied ledger entry and no active run.
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
from keep_sdk.stores import open_store
from tests.runtime.test_crash_matrix import _prepare, _settle

CHILD = Path(__file__).with_name("statement_kill_child.py")
ROOT = Path(__file__).parents[2]


def _child(store_url: str, backing: Path, n: int) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(CHILD), store_url, str(backing), str(n)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        cwd=ROOT,
    )


@pytest.mark.slow
def test_a_kill_before_any_write_or_transaction_of_a_run_loses_and_repeats_nothing(
    tmp_path: Path,
) -> None:
    probe = tmp_path / "probe"
    probe.mkdir()
    _prepare(f"sqlite:///{probe / 'keep.db'}", probe / "doubles.db")
    clean = _child(f"sqlite:///{probe / 'keep.db'}", probe / "doubles.db", 10**9)
    assert clean.returncode == 0, clean.stderr
    statements = clean.stdout.splitlines()
    points = [
        i
        for i, sql in enumerate(statements, start=1)
        if sql.startswith(("BEGIN", "INSERT", "UPDATE", "DELETE"))
    ]
    assert len(points) >= 10, statements
    for n in points:
        case = tmp_path / f"kill{n}"
        case.mkdir()
        url, backing = f"sqlite:///{case / 'keep.db'}", case / "doubles.db"
        _prepare(url, backing)
        child = _child(url, backing, n)
        assert child.returncode == -9, f"not killed before statement {n}: {child.stderr}"
        store = open_store(url)
        sheets = Sheets(backing=backing)
        runtime = Runtime(
            store,
            ConnectorSet([Gmail(backing=backing), sheets, Slack(backing=backing)]),
            load_workflow=KeepPlugins(load_entry_points=False).load_workflow,
        )
        _settle(runtime)
        where = f"killed before statement {n}: {statements[n - 1]}"
        assert len(sheets.effects("appendRow")) == 1, where
        events = store.list_events("mail-to-sheet", topic="email.received")
        assert [e.status for e in events] == [EventStatus.CONSUMED], where
        runs = store.list_runs(workflow="mail-to-sheet")
        assert not [r for r in runs if r.status is RunStatus.ACTIVE], where
        assert len(store.list_ledger(status=LedgerStatus.APPLIED)) == 1, where
        runtime.close()
        store.close()
