"""One workflow over MCP, HTTP, SQL and mail, run by real ``keep run`` / ``keep worker``
processes that are SIGKILLed at every durable checkpoint of every run, then restarted.

The four servers are real and outlive the killed processes: a FastMCP server over
streamable HTTP, the Starlette/uvicorn HTTP service, a SQLite database and an aiosmtpd
server filing into a Maildir. Afterwards each holds each effect exactly once, counted by
the idempotency key the host's ledger used.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from sqlalchemy import create_engine, text
from sqlalchemy.pool import NullPool

from keep_sdk.conformance.postgres import PostgresServer
from keep_sdk.connectors.mail import message_id_for
from keep_sdk.model import EventStatus, LedgerStatus, RunStatus
from keep_sdk.stores import Store, open_store
from tests.connectors.conftest import TOKEN
from tests.connectors.e2e.flow import (
    CONSUMERS,
    GRANTS,
    ORDERS_TABLE,
    SOURCE,
    WORKFLOW,
    Services,
    keep_toml,
)
from tests.connectors.e2e.killpoint import KILL_AT, KILL_LOG
from tests.connectors.http_service import RunningService, running_service
from tests.connectors.mail.smtp_server import SmtpServer, smtp_server
from tests.connectors.mcp.servers import http_server, notes

ROOT = Path(__file__).parents[3]
MAX_STARTS = 12

POINTS: dict[str, tuple[str, ...]] = {
    "after:begin_run": ("poll",),
    "after:commit_producer_run": ("poll",),
    "after:begin_consumer_run": CONSUMERS,
    "before:commit_applied_consumer_run": CONSUMERS,
    "after:commit_applied_consumer_run": CONSUMERS,
}
"""Where a keep process is killed, and the handlers whose runs pass there (one kill each):
the producer ``poll`` and the four consumers, whose operations all reconcile (two
checkpoints). ``before:commit_applied_consumer_run`` is the gap between an effect and its
record, which only each connector's reconciliation closes."""


class Setup:
    """The servers, keep.toml, store and the environment the keep processes run in."""

    def __init__(
        self,
        tmp: Path,
        http: RunningService,
        smtp: SmtpServer,
        mcp_url: str,
        state: Path,
        sql_url: str,
    ) -> None:
        self.tmp = tmp
        self.http = http
        self.smtp = smtp
        self.state = state
        self.orders = create_engine(sql_url, poolclass=NullPool)
        with self.orders.begin() as db:
            db.execute(text(ORDERS_TABLE))
        http.state.contacts["c1"] = {"name": "Ada", "email": "ada@example.com"}
        services = Services(
            mcp_url=mcp_url,
            http_url=http.url,
            sql_url=sql_url,
            smtp_port=smtp.port,
            sent=smtp.recorder.sent,
        )
        self.config = tmp / "keep.toml"
        self.config.write_text(keep_toml(services))
        self.script = tmp / "fulfil.js"
        self.script.write_text(SOURCE)
        self.db = tmp / "keep.db"
        self.kill_log = tmp / "kills.txt"
        self.outputs: list[str] = []
        site = tmp / "site"
        info = site / "keep_killpoint-1.0.dist-info"
        info.mkdir(parents=True)
        (info / "METADATA").write_text(
            "Metadata-Version: 2.1\nName: keep-killpoint\nVersion: 1.0\n"
        )
        (info / "entry_points.txt").write_text(
            "[keep_sdk]\nkillpoint = tests.connectors.e2e.killpoint\n"
        )
        self.env = {
            key: value for key, value in os.environ.items() if key != "KEEP_SDK_DISABLE_PLUGINS"
        }
        self.env.update(
            PYTHONPATH=os.pathsep.join([str(site), str(ROOT)]),
            KEEP_CONFIG=str(self.config),
            CRM_TOKEN=TOKEN,
            **{KILL_LOG: str(self.kill_log)},
        )

    def keep(self, *args: str, kill_at: str | None) -> subprocess.CompletedProcess[str]:
        env = dict(self.env)
        if kill_at is not None:
            env[KILL_AT] = kill_at
        return subprocess.run(
            [sys.executable, "-m", "keep_sdk", *args],
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
            cwd=self.tmp,
            env=env,
        )

    def run_to_completion(self, kill_at: str | None) -> list[int]:
        """``keep run`` once, then ``keep worker --until-idle`` until a process is not
        killed and everything is done; returns each process's exit code."""
        store_url = f"killsqlite:///{self.db}"
        common = ("--store", store_url, "--isolation", "in-process", "--until-idle")
        grants = [arg for grant in GRANTS for arg in ("--grant", grant)]
        codes: list[int] = []
        outputs = self.outputs
        process = self.keep("run", str(self.script), *common, *grants, kill_at=kill_at)
        while True:
            codes.append(process.returncode)
            outputs.append(process.stdout + process.stderr)
            assert process.returncode in (0, -9), "\n---\n".join(o[-3000:] for o in outputs)
            if process.returncode == 0 and self.done():
                return codes
            assert len(codes) < MAX_STARTS, f"no progress after {codes}:\n" + outputs[-1][-3000:]
            process = self.keep("worker", *common, kill_at=kill_at)

    def done(self) -> bool:
        store = open_store(f"sqlite:///{self.db}")
        try:
            events = store.list_events(WORKFLOW)
            return (
                len(events) == 4
                and all(e.status is EventStatus.CONSUMED for e in events)
                and not store.list_runs(workflow=WORKFLOW, status=RunStatus.ACTIVE)
            )
        finally:
            store.close()


@contextmanager
def _setup(tmp_path: Path, sql_url: str) -> Iterator[Setup]:
    state = tmp_path / "notes.json"
    with (
        running_service(TOKEN) as http,
        smtp_server(tmp_path / "Sent") as smtp,
        http_server(state) as mcp_url,
    ):
        running = Setup(tmp_path, http, smtp, mcp_url, state, sql_url)
        yield running
        running.orders.dispose()


@pytest.fixture
def setup(tmp_path: Path) -> Iterator[Setup]:
    """Every server, with the orders table in a SQLite file."""
    with _setup(tmp_path, f"sqlite:///{tmp_path / 'orders.db'}") as running:
        yield running


@pytest.fixture
def setup_postgres(tmp_path: Path, postgres_server: PostgresServer) -> Iterator[Setup]:
    """Every server, with the orders table in a fresh PostgreSQL database."""
    url = postgres_server.create_database("orders")
    with _setup(tmp_path, url.replace("postgresql://", "postgresql+psycopg://")) as running:
        yield running


def _effects_exactly_once(setup: Setup, store: Store) -> None:
    ledger = store.list_ledger()
    assert {(e.connector, e.operation) for e in ledger} == {
        ("notes", "addNote"),
        ("orders", "recordOrder"),
        ("crm", "addNote"),
        ("mail", "send"),
    }
    assert all(e.status is LedgerStatus.APPLIED for e in ledger), ledger
    key = {e.connector: e.idempotency_key for e in ledger}
    assert len(ledger) == 4 == len(set(key.values()))

    assert [(n["key"], n["text"]) for n in notes(setup.state)] == [(key["notes"], "ship o1 to Ada")]
    assert json_calls(setup.state) == 1

    with setup.orders.connect() as db:
        rows = db.execute(text("SELECT id, ticket, idem_key FROM orders")).all()
    assert [tuple(row) for row in rows] == [("o1", "n1", key["orders"])]

    posts = Counter(
        r["idempotencyKey"]
        for r in setup.http.state.received
        if r["method"] == "POST" and r["path"] == "/notes"
    )
    assert posts == {key["crm"]: 1}
    assert [n["text"] for n in setup.http.state.notes.values()] == ["order o1: ticket n1"]

    stored = b"".join(p.read_bytes() for p in setup.tmp.glob("keep.db*"))
    assert TOKEN.encode() not in stored
    assert not [o for o in setup.outputs if TOKEN in o]

    sent = Counter(m["Message-ID"] for m in setup.smtp.messages())
    assert sent == {message_id_for(key["mail"], "example.org"): 1}
    assert [e.rcpt_tos for e in setup.smtp.recorder.received] == [["ada@example.com"]]


def json_calls(state: Path) -> int:
    """How many times the MCP server's addNote tool was called (every call counts)."""
    calls: int = json.loads(state.read_text())["calls"]
    return calls


def test_the_workflow_runs_end_to_end_through_keep_run(setup: Setup) -> None:
    assert setup.run_to_completion(kill_at=None) == [0]
    store = open_store(f"sqlite:///{setup.db}")
    try:
        _effects_exactly_once(setup, store)
        runs = store.list_runs(workflow=WORKFLOW)
        assert Counter(r.handler for r in runs if r.status is RunStatus.COMMITTED) == {
            "poll": 1,
            **dict.fromkeys(CONSUMERS, 1),
        }
    finally:
        store.close()


@pytest.mark.slow
@pytest.mark.parametrize("point", list(POINTS))
def test_sigkill_at_each_checkpoint_of_each_run_leaves_every_effect_exactly_once(
    setup: Setup, point: str
) -> None:
    _kill_everywhere(setup, point)


@pytest.mark.slow
@pytest.mark.postgres
def test_with_the_orders_in_postgresql_a_kill_before_each_record_is_reconciled(
    setup_postgres: Setup,
) -> None:
    _kill_everywhere(setup_postgres, "before:commit_applied_consumer_run")


def _kill_everywhere(setup: Setup, point: str) -> None:
    codes = setup.run_to_completion(kill_at=point)
    kills = setup.kill_log.read_text().splitlines()
    assert sorted(kills) == sorted(f"{point} {handler}" for handler in POINTS[point])
    assert codes.count(-9) == len(kills)
    assert codes[-1] == 0
    store = open_store(f"sqlite:///{setup.db}")
    try:
        _effects_exactly_once(setup, store)
        assert not store.list_runs(workflow=WORKFLOW, status=RunStatus.ACTIVE)
    finally:
        store.close()
