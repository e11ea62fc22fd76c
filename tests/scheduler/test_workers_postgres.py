"""Several `keep worker` processes sharing one PostgreSQL store, including a SIGKILL.

Real processes, a real PostgreSQL server (tests/conftest.py), the built-in
doubles backed by one SQLite file all workers share (the "external world").
"""

from __future__ import annotations

import itertools
import os
import signal
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from keep_sdk.conformance import PostgresServer
from keep_sdk.connectors import ConnectorSet
from keep_sdk.connectors.builtin import Gmail, Sheets, Slack
from keep_sdk.model import EventStatus, RunStatus
from keep_sdk.plugins import KeepPlugins
from keep_sdk.runtime import Runtime
from keep_sdk.sandbox import InProcessIsolation
from keep_sdk.stores import Publication, Store, open_store

pytestmark = [pytest.mark.postgres, pytest.mark.slow]

LEASE_TTL_S = 2.0

SLOW_ROWS = """
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
        const until = Date.now() + 250;
        while (Date.now() < until) {}
      },
    }),
  },
});
"""
"""Each run stays active in the store for 250 ms: the slow part is in `next`, after the
begin commit (which holds prepare's result, so a slow `prepare` ran before the run existed)."""

WORKFLOWS = ("alpha", "beta", "gamma")
JOBS = 5


def _setup(url: str, doubles: Path) -> None:
    store = open_store(url)
    sheets = Sheets(backing=doubles, seed={"spreadsheets": {"jobs": {"rows": []}}})
    runtime = Runtime(
        store,
        ConnectorSet([Gmail(backing=doubles), sheets, Slack(backing=doubles)]),
        load_workflow=KeepPlugins(load_entry_points=False).load_workflow,
        isolation=InProcessIsolation(),
    )
    for name in WORKFLOWS:
        runtime.deploy(SLOW_ROWS.replace("NAME", name))
        store.grant_permission(name, "sheets.write", actor="test")
        for i in range(JOBS):
            store.publish(
                name, Publication(topic="job.queued", message_id=f"{name}-{i}", title=f"Job {i}")
            )
    store.close()


def _worker(url: str, doubles: Path, name: str, log: Path) -> subprocess.Popen[bytes]:
    with log.open("wb") as output:
        return subprocess.Popen(
            [
                sys.executable,
                "-m",
                "keep_sdk",
                "worker",
                "--store",
                url,
                "--doubles",
                str(doubles),
                "--isolation",
                "in-process",
                "--lease-ttl",
                str(LEASE_TTL_S),
                "--poll",
                "0.05",
                "--name",
                name,
            ],
            stdout=output,
            stderr=subprocess.STDOUT,
        )


def _wait_for(condition: Callable[[], bool], timeout_s: float, what: str) -> None:
    deadline = time.monotonic() + timeout_s
    while not condition():
        if time.monotonic() > deadline:
            pytest.fail(f"timed out after {timeout_s}s waiting for {what}")
        time.sleep(0.05)


def _all_consumed(store: Store) -> bool:
    return all(
        e.status is EventStatus.CONSUMED for name in WORKFLOWS for e in store.list_events(name)
    )


@pytest.fixture
def shared(postgres_server: PostgresServer, tmp_path: Path) -> Iterator[tuple[str, Path, Store]]:
    url = postgres_server.create_database("keep_workers")
    doubles = tmp_path / "doubles.db"
    _setup(url, doubles)
    store = open_store(url)
    yield url, doubles, store
    store.close()


def _check_exactly_once(store: Store, doubles: Path) -> None:
    effects = Sheets(backing=doubles).effects("appendRow")
    rows = Counter(tuple(e["params"]["values"]) for e in effects)
    assert sorted(rows) == sorted((w, f"{w}-{i}") for w in WORKFLOWS for i in range(JOBS))
    assert set(rows.values()) == {1}, f"a job was recorded twice: {rows}"
    assert store.active_runs() == []
    for name in WORKFLOWS:
        runs = sorted(store.list_runs(workflow=name), key=lambda r: r.created_at)
        for earlier, later in itertools.pairwise(runs):
            assert later.created_at >= earlier.updated_at, (
                f"runs {earlier.id} and {later.id} of {name} overlapped"
            )


def test_two_workers_share_the_store_and_never_run_one_workflow_twice(
    shared: tuple[str, Path, Store], tmp_path: Path
) -> None:
    url, doubles, store = shared
    workers = [_worker(url, doubles, f"w{i}", tmp_path / f"w{i}.log") for i in range(2)]
    try:
        _wait_for(lambda: _all_consumed(store), 60, "every job to be consumed")
    finally:
        for worker in workers:
            worker.send_signal(signal.SIGTERM)
        for worker in workers:
            assert worker.wait(timeout=20) == 0
    _check_exactly_once(store, doubles)
    logs = [(tmp_path / f"w{i}.log").read_text() for i in range(2)]
    assert all("committed" in log or "done" in log for log in logs), (
        "both workers should have done work:\n" + "\n---\n".join(logs)
    )


def test_a_killed_workers_workflows_continue_on_another_within_the_lease_time(
    shared: tuple[str, Path, Store], tmp_path: Path
) -> None:
    url, doubles, store = shared
    victim = _worker(url, doubles, "victim", tmp_path / "victim.log")
    try:
        _wait_for(
            lambda: (
                any(
                    (lease := store.get_lease(name)) is not None and lease.owner == "victim"
                    for name in WORKFLOWS
                )
                and bool(store.active_runs())
            ),
            30,
            "the victim to hold a lease with a run in progress",
        )
    finally:
        os.kill(victim.pid, signal.SIGKILL)
        victim.wait(timeout=10)
    killed_at = time.monotonic()
    orphans = store.active_runs()
    held = [n for n in WORKFLOWS if (lease := store.get_lease(n)) and lease.owner == "victim"]
    assert held
    survivor = _worker(url, doubles, "survivor", tmp_path / "survivor.log")
    taken: set[str] = set()

    def taken_over() -> bool:
        # The survivor works one workflow at a time and gives a finished one's lease up,
        # so each held workflow counts once it was seen leased to the survivor (or its
        # work was all done without it).
        for n in set(held) - taken:
            lease = store.get_lease(n)
            if (lease is not None and lease.owner == "survivor") or all(
                e.status is EventStatus.CONSUMED for e in store.list_events(n)
            ):
                taken.add(n)
        return taken >= set(held)

    try:
        _wait_for(taken_over, LEASE_TTL_S + 15, "the survivor to take over the victim's workflows")
        takeover_s = time.monotonic() - killed_at
        _wait_for(lambda: _all_consumed(store), 60, "every job to be consumed")
    finally:
        survivor.send_signal(signal.SIGTERM)
        assert survivor.wait(timeout=20) == 0
    assert takeover_s < LEASE_TTL_S + 10
    _check_exactly_once(store, doubles)
    statuses = Counter(r.status for name in WORKFLOWS for r in store.list_runs(workflow=name))
    assert set(statuses) <= {RunStatus.COMMITTED, RunStatus.CRASHED}
    log = (tmp_path / "survivor.log").read_text()
    if orphans:
        assert "recovered after a restart" in log, log
        for orphan in orphans:
            assert store.get_run(orphan.id).status in (RunStatus.CRASHED, RunStatus.COMMITTED)
