"""Two workers on one store divide the due work instead of contending for it.

Two schedulers with their own store connections to one real SQLite file, their
presence announced as `keep worker` announces it, step in an order hypothesis
chooses. Whatever the order: every job is recorded exactly once; no worker ever
tries to claim a workflow the other holds (a failed claim is a wasted write,
every step, in the design this replaces); and a worker finds nothing to do only
while every due workflow is held by the other. The cost of a run with two
workers is counted in statements against one worker draining the same backlog, and
the even split of a backlog is checked on SQLite and on PostgreSQL.
"""

from __future__ import annotations

import tempfile
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from keep_sdk.conformance import PostgresServer
from keep_sdk.connectors import ConnectorSet
from keep_sdk.connectors.builtin import Gmail, Sheets, Slack
from keep_sdk.model import EventStatus, RunStatus
from keep_sdk.plugins import KeepPlugins
from keep_sdk.runtime import Runtime
from keep_sdk.sandbox import InProcessIsolation
from keep_sdk.scheduler import Scheduler
from keep_sdk.stores import Lease, Publication, SqlStore, utc_now
from tests.scheduler.workflows import JOBS as SCRIPT

LOADER = KeepPlugins(load_entry_points=False).load_workflow

PRESENCE = "keep-worker:"
"""The presence rows' prefix: a worker taking the first free slot is not a claim on work."""


class Worker:
    """One scheduler with its own store connection; counts its failed claims."""

    def __init__(self, url: str, name: str, doubles: Path) -> None:
        self.store = SqlStore(url)
        self.sheets = Sheets(backing=doubles)
        runtime = Runtime(
            self.store,
            ConnectorSet([Gmail(backing=doubles), self.sheets, Slack(backing=doubles)]),
            load_workflow=LOADER,
            isolation=InProcessIsolation(),
        )
        self.scheduler = Scheduler(runtime, worker=name, lease_ttl_s=600)
        self.failed_claims: list[str] = []
        acquire = self.store.acquire_lease

        def counted(workflow: str, owner: str, **kwargs: Any) -> Lease | None:
            lease = acquire(workflow, owner, **kwargs)
            if lease is None and not workflow.startswith(PRESENCE):
                self.failed_claims.append(workflow)
            return lease

        self.store.acquire_lease = counted  # type: ignore[method-assign]


def setup(folder: Path, jobs: list[int], url: str | None = None) -> tuple[str, Path]:
    """A store (SQLite in `folder` unless `url` is given) with one workflow per entry of
    `jobs`, each with that many jobs."""
    url = url or f"sqlite:///{folder / 'keep.db'}"
    doubles = folder / "doubles.db"
    store = SqlStore(url)
    runtime = Runtime(
        store,
        ConnectorSet(
            [
                Gmail(backing=doubles),
                Sheets(backing=doubles, seed={"spreadsheets": {"jobs": {"rows": []}}}),
                Slack(backing=doubles),
            ]
        ),
        load_workflow=LOADER,
        isolation=InProcessIsolation(),
    )
    for w, count in enumerate(jobs):
        runtime.deploy(SCRIPT.replace("NAME", f"w{w}"))
        store.grant_permission(f"w{w}", "sheets.write", actor="test")
        for j in range(count):
            store.publish(
                f"w{w}", Publication(topic="job.queued", message_id=f"w{w}-{j}", title="job")
            )
    store.close()
    return url, doubles


@contextmanager
def workers(url: str, doubles: Path, count: int) -> Iterator[list[Worker]]:
    team = [Worker(url, f"worker-{i}", doubles) for i in range(count)]
    for worker in team:
        worker.scheduler.leases.announce()
    try:
        yield team
    finally:
        for worker in team:
            worker.scheduler.close()
            worker.store.close()


def held_by(store: SqlStore, workflow: str, now: Any) -> str | None:
    lease = store.get_lease(workflow)
    return lease.owner if lease is not None and not lease.expired(now) else None


def drain(team: list[Worker], order: Callable[[int], int]) -> tuple[int, int]:
    """Step the workers (`order(i)` picks the i-th) until neither finds work; return the
    committed runs and the steps that found nothing while a free workflow was due."""
    committed = idle_in_a_row = wasted = i = 0
    while idle_in_a_row < 2 * len(team):
        worker = team[order(i) % len(team)]
        i += 1
        activity = worker.scheduler.step()
        if activity is not None:
            idle_in_a_row = 0
            committed += sum(r.status is RunStatus.COMMITTED for r in activity.runs)
            continue
        idle_in_a_row += 1
        now = worker.scheduler.clock()
        free = [
            t.workflow
            for t in worker.scheduler.due()
            if held_by(worker.store, t.workflow, now) in (None, worker.scheduler.worker)
        ]
        wasted += bool(free)
        assert i < 10_000, "the workers did not become idle"
    return committed, wasted


@settings(
    max_examples=12,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
    derandomize=True,
)
@given(
    jobs=st.lists(st.integers(min_value=0, max_value=3), min_size=1, max_size=4),
    order=st.lists(st.integers(min_value=0, max_value=1), min_size=1, max_size=30),
)
def test_two_workers_divide_the_work_without_contending(jobs: list[int], order: list[int]) -> None:
    with tempfile.TemporaryDirectory() as folder:
        url, doubles = setup(Path(folder), jobs)
        with workers(url, doubles, 2) as team:
            committed, wasted = drain(team, lambda i: order[i % len(order)])
            store = team[0].store
            assert committed == sum(jobs)
            assert [w.failed_claims for w in team] == [[], []], "a worker tried a held workflow"
            assert wasted == 0, "a worker found nothing to do while a free workflow was due"
            effects = Counter(
                tuple(e["params"]["values"]) for e in team[0].sheets.effects("appendRow")
            )
            assert set(effects.values()) <= {1}
            assert sorted(effects) == sorted(
                (f"w{w}", f"w{w}-{j}") for w, count in enumerate(jobs) for j in range(count)
            )
            assert all(
                e.status is EventStatus.CONSUMED
                for w in range(len(jobs))
                for e in store.list_events(f"w{w}")
            )


@pytest.fixture(params=["sqlite", pytest.param("postgresql", marks=pytest.mark.postgres)])
def database(request: pytest.FixtureRequest, tmp_path: Path) -> str | None:
    """None for a SQLite file, or a fresh PostgreSQL database's URL."""
    if request.param == "sqlite":
        return None
    server: PostgresServer = request.getfixturevalue("postgres_server")
    return server.create_database("keep_dividing")


def test_both_workers_take_a_share_of_a_backlog(tmp_path: Path, database: str | None) -> None:
    url, doubles = setup(tmp_path, [3] * 4, database)
    with workers(url, doubles, 2) as team:
        done: Counter[str] = Counter()
        for i in range(12):
            worker = team[i % 2]
            activity = worker.scheduler.step()
            assert activity is not None
            done[worker.scheduler.worker] += 1
        assert done == {"worker-0": 6, "worker-1": 6}
        assert all(w.failed_claims == [] for w in team)


def count_statements(store: SqlStore) -> Callable[[], int]:
    seen: list[str] = []

    def record(conn: Any, cursor: Any, statement: str, *rest: Any) -> None:
        seen.append(statement)

    sa.event.listen(store.engine, "before_cursor_execute", record)
    return lambda: len(seen)


def test_a_run_costs_no_more_statements_with_two_workers_than_with_one(tmp_path: Path) -> None:
    per_run: dict[int, float] = {}
    for count in (1, 2):
        folder = tmp_path / str(count)
        folder.mkdir()
        url, doubles = setup(folder, [5] * 8)
        with workers(url, doubles, count) as team:
            counters = [count_statements(w.store) for w in team]
            committed, _ = drain(team, lambda i: i)
            assert committed == 40
            per_run[count] = sum(c() for c in counters) / committed
    assert per_run[2] <= per_run[1] * 1.2, per_run


def test_presence_rows_are_reused_not_left_behind(tmp_path: Path) -> None:
    url, doubles = setup(tmp_path, [0])
    for _ in range(3):
        with workers(url, doubles, 2) as team:
            names = sorted(lease.workflow for lease in team[0].store.list_leases())
            assert len(names) == 2, names
    store = SqlStore(url)
    try:
        now = utc_now()
        assert len(store.list_leases()) == 2
        assert all(lease.expired(now) for lease in store.list_leases())
    finally:
        store.close()
