"""``keep worker --processes N``: real worker processes on one real SQLite store, killed
(each of them, their supervisor), stopped and refused, with every job checked recorded
exactly once in the doubles the processes share."""

from __future__ import annotations

import contextlib
import datetime as dt
import itertools
import os
import random
import re
import signal
import socket
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from keep_sdk.connectors import ConnectorSet
from keep_sdk.connectors.builtin import Gmail, Sheets, Slack
from keep_sdk.model import EventStatus, RunStatus
from keep_sdk.plugins import KeepPlugins
from keep_sdk.runtime import Runtime
from keep_sdk.sandbox import InProcessIsolation
from keep_sdk.stores import Publication, SqlStore, Store, open_store
from keep_sdk.stores.sql import _schema

pytestmark = pytest.mark.slow

ROWS = """
export default Keep.workflow({
  name: "NAME",
  topics: { "job.queued": {} },
  consumers: {
    work: Keep.consumer({
      subscribe: ["job.queued"],
      async prepare(ctx, state) {
        const [job] = await ctx.peek("job.queued", { limit: 1 });
        if (!job) return { reservations: [], data: {} };
        return { reservations: [{ topic: "job.queued", ids: [job.messageId] }],
                 data: { id: job.messageId }, ui: { title: `Record job ${job.messageId}` } };
      },
      async mutate(ctx, prepared) {
        await ctx.sheets.appendRow({ spreadsheetId: "jobs", values: ["NAME", prepared.data.id] });
      },
      async next(ctx, prepared, mutationResult) {
        const until = Date.now() + BUSY_MS;
        while (Date.now() < until) {}
      },
    }),
  },
});
"""
"""Each run stays active for BUSY_MS after its mutation, so a kill lands inside runs."""

WORKFLOWS = ("alpha", "beta", "gamma", "delta")
JOBS = 6


class World:
    """A SQLite store with `WORKFLOWS` deployed, `JOBS` jobs each, and the doubles file
    the worker processes share."""

    def __init__(self, folder: Path, busy_ms: int = 60) -> None:
        self.folder = folder
        self.url = f"sqlite:///{folder / 'keep.db'}"
        self.doubles = folder / "doubles.db"
        self.log = folder / "worker.log"
        store = open_store(self.url)
        sheets = Sheets(backing=self.doubles, seed={"spreadsheets": {"jobs": {"rows": []}}})
        runtime = Runtime(
            store,
            ConnectorSet([Gmail(backing=self.doubles), sheets, Slack(backing=self.doubles)]),
            load_workflow=KeepPlugins(load_entry_points=False).load_workflow,
            isolation=InProcessIsolation(),
        )
        for name in WORKFLOWS:
            runtime.deploy(ROWS.replace("NAME", name).replace("BUSY_MS", str(busy_ms)))
            store.grant_permission(name, "sheets.write", actor="test")
            for i in range(JOBS):
                message = Publication(topic="job.queued", message_id=f"{name}-{i}", title="Job")
                store.publish(name, message)
        self.store: Store = store

    def worker(self, *options: str) -> subprocess.Popen[bytes]:
        """``keep worker --processes 2`` on the world (in-process phases, 50 ms polls, a
        2 s lease), its output in `log`."""
        with self.log.open("ab") as output:
            return subprocess.Popen(
                [
                    *(sys.executable, "-m", "keep_sdk", "worker", "--store", self.url),
                    *("--doubles", str(self.doubles), "--isolation", "in-process"),
                    *("--poll", "0.05", "--lease-ttl", "2", "--processes", "2"),
                    *options,
                ],
                stdout=output,
                stderr=subprocess.STDOUT,
            )

    def text(self) -> str:
        return self.log.read_text()

    def all_consumed(self) -> bool:
        return all(
            e.status is EventStatus.CONSUMED
            for name in WORKFLOWS
            for e in self.store.list_events(name)
        )

    def check_exactly_once(self, killed: tuple[int, ...] = ()) -> None:
        """Every job recorded once in the shared sheet, no run active, no lease live but
        those of the `killed` processes (their time runs out), and the runs of each
        workflow one after the other."""
        effects = Sheets(backing=self.doubles).effects("appendRow")
        rows = Counter(tuple(e["params"]["values"]) for e in effects)
        expected = sorted((w, f"{w}-{i}") for w in WORKFLOWS for i in range(JOBS))
        assert sorted(rows) == expected, self.text()
        assert set(rows.values()) == {1}, f"a job was recorded twice: {rows}"
        assert self.store.active_runs() == []
        now = dt.datetime.now(dt.UTC)
        live = [lease for lease in self.store.list_leases() if lease.expires_at > now]
        assert all(int(lease.owner.split(":")[1]) in killed for lease in live), live
        for name in WORKFLOWS:
            runs = sorted(self.store.list_runs(workflow=name), key=lambda r: r.created_at)
            assert {r.status for r in runs} <= {RunStatus.COMMITTED, RunStatus.CRASHED}
            for earlier, later in itertools.pairwise(runs):
                assert later.created_at >= earlier.updated_at, f"runs of {name} overlapped"


@pytest.fixture
def world(tmp_path: Path) -> Iterator[World]:
    made = World(tmp_path)
    yield made
    made.store.close()


def children(pid: int) -> list[int]:
    """The child processes of `pid` that are alive, not zombies (Linux ``/proc``)."""
    found: list[int] = []
    for task in Path(f"/proc/{pid}/task").iterdir():
        with contextlib.suppress(FileNotFoundError):
            found += [int(child) for child in (task / "children").read_text().split()]
    return [child for child in found if alive(child)]


def alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()[0]
    except FileNotFoundError:
        return False
    return state != "Z"


def wait_for(condition: Callable[[], bool], timeout_s: float, what: str) -> None:
    deadline = time.monotonic() + timeout_s
    while not condition():
        if time.monotonic() > deadline:
            pytest.fail(f"timed out after {timeout_s}s waiting for {what}")
        time.sleep(0.05)


def stopped(process: subprocess.Popen[bytes], world: World) -> int:
    process.send_signal(signal.SIGTERM)
    try:
        return process.wait(timeout=30)
    except subprocess.TimeoutExpired:
        process.kill()
        pytest.fail(f"the supervisor did not stop on SIGTERM:\n{world.text()}")


def test_the_processes_divide_the_work_and_record_every_job_once(world: World) -> None:
    assert world.worker("--until-idle").wait(timeout=120) == 0, world.text()
    world.check_exactly_once()
    text = world.text()
    assert "starting 2 worker processes" in text
    starts = [line for line in text.splitlines() if " worker " in line and " on sqlite" in line]
    assert sorted(line[:4] for line in starts) == ["[1] ", "[2] "], text
    assert "] alpha/work" in text or "] beta/work" in text


def test_a_killed_process_is_started_again_and_no_job_is_lost_or_repeated(
    world: World,
) -> None:
    supervisor = world.worker()
    rng = random.Random(32)
    killed: list[int] = []
    try:
        for _ in range(3):
            wait_for(lambda: len(children(supervisor.pid)) == 2, 30, "two worker processes")
            if world.all_consumed():
                break
            time.sleep(rng.uniform(0.2, 0.9))
            victim = rng.choice(children(supervisor.pid))
            os.kill(victim, signal.SIGKILL)
            killed.append(victim)
            wait_for(lambda: not alive(killed[-1]), 10, "the victim to go")
        wait_for(world.all_consumed, 90, "every job to be consumed")
    finally:
        code = stopped(supervisor, world)
    assert code == 0, world.text()
    world.check_exactly_once(tuple(killed))
    text = world.text()
    assert killed, "the work ended before the first kill"
    for pid in killed:
        assert f"(pid {pid}) was ended by SIGKILL; starting it again in" in text, text


def test_sigterm_stops_every_process_and_releases_its_leases(world: World) -> None:
    supervisor = world.worker()
    try:
        wait_for(lambda: bool(world.store.active_runs()), 30, "a run in progress")
        workers = children(supervisor.pid)
        assert len(workers) == 2
    finally:
        code = stopped(supervisor, world)
    assert code == 0, world.text()
    assert not any(alive(pid) for pid in workers)
    assert world.store.active_runs() == []
    now = dt.datetime.now(dt.UTC)
    assert all(lease.expires_at <= now for lease in world.store.list_leases())


def test_the_processes_stop_when_their_supervisor_is_killed(world: World) -> None:
    supervisor = world.worker()
    try:
        wait_for(lambda: bool(world.store.active_runs()), 30, "a run in progress")
        workers = children(supervisor.pid)
        assert len(workers) == 2
    finally:
        supervisor.kill()
        supervisor.wait()
    wait_for(lambda: not any(alive(pid) for pid in workers), 15, "the orphans to stop")
    assert world.store.active_runs() == []
    now = dt.datetime.now(dt.UTC)
    assert all(lease.expires_at <= now for lease in world.store.list_leases())
    assert world.worker("--until-idle").wait(timeout=120) == 0, world.text()
    world.check_exactly_once()


def test_a_second_signal_kills_the_processes_still_in_a_run(tmp_path: Path) -> None:
    world = World(tmp_path, busy_ms=20_000)
    supervisor = world.worker()
    try:
        wait_for(lambda: len(world.store.active_runs()) == 2, 30, "two runs in progress")
        workers = children(supervisor.pid)
        supervisor.send_signal(signal.SIGTERM)
        time.sleep(0.5)
        assert supervisor.poll() is None, "a run of 20 s ended within 0.5 s"
        started = time.monotonic()
        supervisor.send_signal(signal.SIGTERM)
        code = supervisor.wait(timeout=15)
    finally:
        supervisor.kill()
        world.store.close()
    assert time.monotonic() - started < 10
    assert code == 1, world.text()
    assert "killed 2 worker processes that had not stopped" in world.text()
    assert not any(alive(pid) for pid in workers)


def test_a_process_that_exits_with_a_problem_stops_the_others(world: World) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        second = taken.getsockname()[1]
        supervisor = world.worker("--metrics-port", str(second - 1))
        code = supervisor.wait(timeout=60)
    text = world.text()
    assert code == 2, text
    assert re.search(r"worker process 2 \(pid \d+\) exited with code 2; stopping the others", text)
    assert "port" in text


def test_a_store_kept_in_one_process_is_refused(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "keep_sdk", "worker", "--store", "memory://", "--processes", "2"],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=60,
    )
    assert done.returncode == 2, done.stderr
    assert "--processes 2 needs a store the processes share" in done.stderr
    assert "starting" not in done.stderr


def test_a_store_no_worker_can_use_is_one_message_and_no_process(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'keep.db'}"
    store = SqlStore(url)
    with store.engine.begin() as conn:
        conn.execute(_schema.schema_info.update().values(version=_schema.SCHEMA_VERSION + 1))
    store.close()
    done = subprocess.run(
        [sys.executable, "-m", "keep_sdk", "worker", "--store", url, "--processes", "3"],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=60,
    )
    assert done.returncode == 1, done.stderr
    assert done.stderr.count("error:") == 1, done.stderr
    assert "newer" in done.stderr
    assert "starting" not in done.stderr
