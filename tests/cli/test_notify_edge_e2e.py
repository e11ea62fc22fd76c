"""Notifications checked at the edge, end to end: a result that cannot enter the run is
refused by `keep notify` (a process: exit 2, the reason, no traceback) and by
``POST /api/notify/{key}`` (400) before anything is stored, the parked run keeps waiting
and a valid result afterwards continues it to its commit; on SQLite and PostgreSQL.
Also: a run's console-output total continues when another process resumes it."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest

from keep_sdk.console import ConsoleSettings, create_app
from keep_sdk.model import HostPolicy, RunRecord, RunStatus
from keep_sdk.stores import open_store
from tests.cli.terminal import keep
from tests.console.server import served
from tests.console.stores import TOKEN, opened
from tests.console.test_app import ACTOR, BEARER

KEEP = [sys.executable, "-m", "keep_sdk"]
ROOT = Path(__file__).parents[2]
LIMITS = HostPolicy().sandbox
KIB = 1024

WORKFLOW = """
export default Keep.workflow({
  name: "asks",
  topics: { "asked": {}, "answered": {} },
  consumers: {
    ask: Keep.consumer({
      subscribe: ["asked"],
      publishes: ["answered"],
      async prepare(ctx, state) {
        const [e] = await ctx.peek("asked", { limit: 1 });
        if (!e) return { reservations: [], data: {} };
        for (let i = 0; i < PREPARE_LINES; i++) console.log(String(i).padEnd(4000, "p"));
        const reservations = [{ topic: "asked", ids: [e.messageId] }];
        return { reservations, data: { id: e.messageId } };
      },
      async mutate(ctx, prepared) {
        await ctx.approvals.request({ to: "ann@example.com", subject: "Please answer" });
      },
      async next(ctx, prepared, mutationResult) {
        for (let i = 0; i < NEXT_LINES; i++) console.log(String(i).padEnd(4000, "n"));
        await ctx.publish("answered", {
          messageId: prepared.data.id, title: "answered", payload: mutationResult.result,
        });
      },
    }),
  },
});
"""


@dataclass(frozen=True)
class Parked:
    """A store whose `asks` run waits for its correlation key."""

    folder: Path
    store: str
    key: str

    @property
    def doubles(self) -> tuple[str, str]:
        return ("--doubles", str(self.folder / "doubles.db"))

    def notify(self, result: str) -> subprocess.CompletedProcess[str]:
        """``keep notify KEY --result RESULT`` as a process of its own."""
        env = {**os.environ, "PYTHONPATH": str(ROOT)}
        env.pop("KEEP_CONFIG", None)
        command = [*KEEP, "notify", self.key, "--result", result, "--store", self.store]
        command += [*self.doubles, "--isolation", "in-process"]
        return subprocess.run(
            command, cwd=self.folder, env=env, capture_output=True, text=True, timeout=120
        )

    def run(self) -> RunRecord:
        store = open_store(self.store)
        try:
            [run] = store.list_runs(workflow="asks")
            return run
        finally:
            store.close()


def park(folder: Path, store: str, *, prepare_lines: int = 0, next_lines: int = 0) -> Parked:
    """Deploy the `asks` workflow on `store`, publish one event and park its run."""
    script = folder / "asks.js"
    text = WORKFLOW.replace("PREPARE_LINES", str(prepare_lines))
    script.write_text(text.replace("NEXT_LINES", str(next_lines)))
    common = ("--store", store, "--doubles", str(folder / "doubles.db"))
    run = ("run", str(script), *common, "--until-idle", "--isolation", "in-process")
    done = keep(*run, "--grant", "approvals.request")
    assert done.code == 0, done.err
    done = keep(
        "publish", "asked", "--message-id", "q-1", "--title", "a question",
        "--payload", "{}", "--store", store,
    )  # fmt: skip
    assert done.code == 0, done.err
    done = keep(*run)
    assert done.code == 0, done.err
    waits = json.loads(keep("status", "--store", store, "--json").out)["workflows"][0]["waiting"]
    key = re.search(r"kc-[0-9a-f]{40}", str(waits[0]["why"])).group(0)  # type: ignore[union-attr]
    parked = Parked(folder, store, key)
    assert parked.run().status is RunStatus.PAUSED_WAITING
    return parked


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def store_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'keep.db'}"
    server = request.getfixturevalue("postgres_server")
    return str(server.create_database("notify_edge"))


@pytest.fixture
def parked(tmp_path: Path, store_url: str, monkeypatch: pytest.MonkeyPatch) -> Parked:
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("KEEP_CONFIG", raising=False)
    return park(tmp_path, store_url)


def _deep(depth: int) -> str:
    return "[" * depth + "]" * depth


REFUSED = [
    pytest.param('{"n": NaN}', "is NaN, which is not a finite number", id="nan"),
    pytest.param('{"s": "\\ud800"}', "lone UTF-16 surrogate", id="lone-surrogate"),
    pytest.param(_deep(20_000), f"deeper than {LIMITS.max_value_depth} levels", id="deep"),
    pytest.param("@huge", f"more than {LIMITS.max_value_bytes} bytes of JSON", id="40MB-file"),
]


def _result_argument(parked: Parked, result: str) -> str:
    """`result`, with ``@huge`` a file of a 40 MB JSON string."""
    if result != "@huge":
        return result
    path = parked.folder / "huge.json"
    path.write_text(json.dumps("x" * (40 * 1024 * 1024)))
    return f"@{path}"


def _continues_to_its_commit(parked: Parked) -> None:
    done = keep(
        "notify", parked.key, "--result", '{"answer": 42}', "--store", parked.store,
        *parked.doubles, "--isolation", "in-process",
    )  # fmt: skip
    assert done.code == 0, done.err
    assert "is committed" in done.out
    run = parked.run()
    assert run.status is RunStatus.COMMITTED
    assert run.mutation_result is not None
    assert run.mutation_result.result == {"answer": 42}


@pytest.mark.parametrize(("result", "reason"), REFUSED)
def test_keep_notify_refuses_a_result_that_cannot_enter_the_run(
    parked: Parked, result: str, reason: str
) -> None:
    before = parked.run()
    done = parked.notify(_result_argument(parked, result))
    assert done.returncode == 2, (done.stdout, done.stderr)
    assert reason in done.stderr
    assert "the run keeps waiting" in done.stderr
    assert "Traceback" not in done.stdout + done.stderr
    assert parked.run() == before
    _continues_to_its_commit(parked)


@pytest.fixture
def console(parked: Parked) -> Iterator[httpx.Client]:
    inst = opened(parked.store)
    app = create_app(ConsoleSettings(store_url=parked.store, token=TOKEN, actor=ACTOR), inst)
    try:
        with served(app) as base, httpx.Client(base_url=base, timeout=120) as http:
            yield http
    finally:
        inst.close()


def test_the_api_refuses_the_same_results_with_400_and_the_run_keeps_waiting(
    parked: Parked, console: httpx.Client
) -> None:
    before = parked.run()
    for param in REFUSED:
        result, reason = param.values
        body = (
            json.dumps("x" * (40 * 1024 * 1024)).encode()
            if result == "@huge"
            else str(result).encode()
        )
        answer = console.post(f"/api/notify/{parked.key}", content=body, headers=BEARER)
        assert answer.status_code == 400, (param.id, answer.text)
        assert str(reason) in answer.json()["error"]["message"], param.id
        assert parked.run() == before, param.id
    answer = console.post(f"/api/notify/{parked.key}", json={"answer": 42}, headers=BEARER)
    assert answer.status_code == 202, answer.text
    assert answer.json()["run"]["status"] == RunStatus.COMMITTED.value


def _stored_log_bytes(run: RunRecord) -> int:
    return sum(len(line.partition(": ")[2].encode()) for line in run.logs)


def test_the_log_total_continues_when_another_process_resumes_the_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("KEEP_CONFIG", raising=False)
    limit = LIMITS.max_log_bytes
    prepare_lines = (limit - 56 * KIB) // 4000
    parked = park(
        tmp_path, f"sqlite:///{tmp_path / 'keep.db'}", prepare_lines=prepare_lines, next_lines=25
    )
    logged = _stored_log_bytes(parked.run())
    assert limit - 60 * KIB < logged <= limit
    done = parked.notify('{"answer": 42}')
    assert "Traceback" not in done.stdout + done.stderr
    run = parked.run()
    assert _stored_log_bytes(run) <= limit, (_stored_log_bytes(run), limit)
    assert run.status is not RunStatus.ACTIVE
    assert "max_log_bytes" in (run.error or "") + done.stdout + done.stderr
