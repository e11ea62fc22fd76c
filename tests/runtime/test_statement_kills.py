"""SIGKILL a real process just before each write statement, each transaction and each
commit of a write transaction of a run (counted below the store by SQLAlchemy's engine
events), then recover, on SQLite and on PostgreSQL.

Whatever statement the kill lands on, recovery leaves a consumer's row written exactly
once, the event consumed, one applied ledger entry and no active run; a producer's
publishes are kept exactly once, by the run that committed them, with the cursor that
run saved.
"""

from __future__ import annotations

import json
import select
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import psycopg
import pytest

from keep_sdk.conformance import PostgresServer
from keep_sdk.connectors import ConnectorSet
from keep_sdk.connectors.builtin import Gmail, Sheets, Slack
from keep_sdk.model import EventStatus, LedgerStatus, RunStatus
from keep_sdk.plugins import KeepPlugins
from keep_sdk.runtime import Runtime
from keep_sdk.sandbox import InProcessIsolation
from keep_sdk.stores import Store, open_store
from tests.runtime.harness import MAIL, MAIL_TO_SHEET
from tests.runtime.test_crash_matrix import _prepare, _settle

CHILD = Path(__file__).with_name("statement_kill_child.py")
ROOT = Path(__file__).parents[2]
WRITES = ("INSERT", "UPDATE", "DELETE")


class _Runs:
    """The child: one process that imported the SDK and forks a process for each run,
    so a kill costs a fork, not an interpreter's start."""

    def __init__(self, folder: Path) -> None:
        self._folder = folder
        self._errors = (folder / "server.err").open("w")
        self._server = subprocess.Popen(
            [sys.executable, str(CHILD)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self._errors,
            text=True,
            cwd=ROOT,
        )

    def run(self, store_url: str, backing: Path, n: int, kind: str) -> tuple[int, str, str]:
        """Run `kind` killed before statement `n`: its exit code, output and errors."""
        assert self._server.stdin is not None
        assert self._server.stdout is not None
        out = self._folder / f"run{n}.out"
        request = [store_url, str(backing), n, kind, str(out)]
        self._server.stdin.write(json.dumps(request) + "\n")
        self._server.stdin.flush()
        ready, _, _ = select.select([self._server.stdout], [], [], 120)
        answer = self._server.stdout.readline() if ready else ""
        errors = out.with_name(out.name + ".err")
        assert answer, f"no answer for statement {n}: {(self._folder / 'server.err').read_text()}"
        return int(answer), out.read_text(), errors.read_text() if errors.exists() else ""

    def close(self) -> None:
        assert self._server.stdin is not None
        assert self._server.stdout is not None
        self._server.stdin.close()
        self._server.wait(timeout=30)
        self._server.stdout.close()
        self._errors.close()


def _kill_points(statements: list[str]) -> list[int]:
    """Every write, every transaction's begin, and the commit of each write transaction."""
    points, wrote = [], False
    for i, sql in enumerate(statements, start=1):
        if sql.startswith("BEGIN"):
            wrote = False
            points.append(i)
        elif sql.startswith(WRITES):
            wrote = True
            points.append(i)
        elif sql == "COMMIT" and wrote:
            points.append(i)
    return points


def _runtime(store: Store, backing: Path) -> Runtime:
    return Runtime(
        store,
        ConnectorSet([Gmail(backing=backing), Sheets(backing=backing), Slack(backing=backing)]),
        load_workflow=KeepPlugins(load_entry_points=False).load_workflow,
        isolation=InProcessIsolation(),
    )


def _prepare_producer(store_url: str, backing: Path) -> None:
    """The mail-to-sheet workflow deployed, three mails in the inbox, nothing published."""
    store = open_store(store_url)
    Gmail(backing=backing, seed=MAIL)
    _runtime(store, backing).deploy(MAIL_TO_SHEET)
    store.grant_permission("mail-to-sheet", "gmail.read", actor="test")
    store.close()


def _check_consumer(store: Store, backing: Path, where: str) -> None:
    runtime = _runtime(store, backing)
    _settle(runtime)
    assert len(Sheets(backing=backing).effects("appendRow")) == 1, where
    events = store.list_events("mail-to-sheet", topic="email.received")
    assert [e.status for e in events] == [EventStatus.CONSUMED], where
    runs = store.list_runs(workflow="mail-to-sheet")
    assert not [r for r in runs if r.status is RunStatus.ACTIVE], where
    assert len(store.list_ledger(status=LedgerStatus.APPLIED)) == 1, where
    runtime.close()


def _check_producer(store: Store, backing: Path, where: str) -> None:
    runtime = _runtime(store, backing)
    runtime.recover()
    for paused in store.list_runs(status=RunStatus.PAUSED_TRANSIENT):
        runtime.resume(paused.id)
    runtime.run_producer("mail-to-sheet", "pollEmail")
    events = store.list_events("mail-to-sheet", topic="email.received")
    assert [e.message_id for e in events] == ["m1", "m2", "m3"], where
    assert {e.status for e in events} == {EventStatus.PENDING}, where
    runs = {r.id: r for r in store.list_runs(workflow="mail-to-sheet")}
    creators = {e.created_by for e in events}
    assert len(creators) == 1, where
    [creator] = creators
    assert creator is not None
    assert runs[creator].status is RunStatus.COMMITTED, where
    assert runs[creator].output_state == {"cursor": MAIL["messages"][-1]["receivedAt"]}, where
    handler = store.get_handler("mail-to-sheet", "pollEmail")
    assert handler.state == {"cursor": MAIL["messages"][-1]["receivedAt"]}, where
    assert not [r for r in runs.values() if r.status is RunStatus.ACTIVE], where
    assert store.list_ledger(workflow="mail-to-sheet") == [], where
    runtime.close()


def _kill_matrix(
    new_url: Callable[[str], str],
    tmp_path: Path,
    kind: str,
    done_with: Callable[[str], None] = lambda url: None,
) -> None:
    prepare = _prepare_producer if kind == "producer" else _prepare
    check = _check_producer if kind == "producer" else _check_consumer
    probe = tmp_path / "probe"
    probe.mkdir()
    url = new_url("probe")
    prepare(url, probe / "doubles.db")
    runs = _Runs(tmp_path)
    try:
        code, out, errors = runs.run(url, probe / "doubles.db", 10**9, kind)
        assert code == 0, errors
        statements = out.splitlines()
        points = _kill_points(statements)
        assert len(points) >= 10, statements
        for n in points:
            case = tmp_path / f"kill{n}"
            case.mkdir()
            url, backing = new_url(f"kill{n}"), case / "doubles.db"
            prepare(url, backing)
            code, _, errors = runs.run(url, backing, n, kind)
            assert code == -9, f"not killed before statement {n}: {errors}"
            store = open_store(url)
            try:
                check(store, backing, f"killed before statement {n}: {statements[n - 1]}")
            finally:
                store.close()
                done_with(url)
    finally:
        runs.close()


def _sqlite(tmp_path: Path) -> Callable[[str], str]:
    def new_url(name: str) -> str:
        (tmp_path / name).mkdir(exist_ok=True)
        return f"sqlite:///{tmp_path / name / 'keep.db'}"

    return new_url


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["consumer", "producer"])
def test_sqlite_a_kill_before_any_write_begin_or_commit_loses_and_repeats_nothing(
    tmp_path: Path, kind: str
) -> None:
    _kill_matrix(_sqlite(tmp_path), tmp_path, kind)


@pytest.mark.slow
@pytest.mark.postgres
@pytest.mark.parametrize("kind", ["consumer", "producer"])
def test_postgres_a_kill_before_any_write_begin_or_commit_loses_and_repeats_nothing(
    postgres_server: PostgresServer, tmp_path: Path, kind: str
) -> None:
    def drop(url: str) -> None:
        with psycopg.connect(postgres_server.admin_url, autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{url.rpartition("/")[2]}" WITH (FORCE)')

    _kill_matrix(
        lambda name: postgres_server.create_database(f"kills_{name}"), tmp_path, kind, drop
    )
