"""A consumer with a backlog is drained without a plan before every run, and nothing starves.

Real QuickJS, a real SQLite file and a fake clock. The scheduler plans, then runs the
chosen consumer again while it has pending events, its lease is fresh and the budget
(`drain_runs` runs, `drain_s` seconds) lasts. Held here: every job is recorded once
and in order whatever the interleaving; the work the planner ranks first never waits
more than one budget; a long drain costs the scheduler a few statements per run, not a
plan; and a lost or ageing lease, a failure or a pause ends the drain at once.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from keep_sdk.conformance import ManualClock
from keep_sdk.connectors import ConnectorSet
from keep_sdk.connectors.builtin import FaultKind, Gmail, Sheets, Slack
from keep_sdk.model import EventStatus, RunStatus
from keep_sdk.plugins import KeepPlugins
from keep_sdk.runtime import Runtime
from keep_sdk.sandbox import InProcessIsolation
from keep_sdk.scheduler import Activity, Scheduler, TaskKind
from keep_sdk.stores import Lease, Publication, SqlStore, open_store
from tests.runtime.harness import fast_policy
from tests.scheduler.workflows import JOBS as CONSUMER

LOADER = KeepPlugins(load_entry_points=False).load_workflow

TICKER = """
export default Keep.workflow({
  name: "ticker",
  topics: { "tick.rang": {} },
  producers: {
    tick: {
      schedule: { interval: "5s" },
      handler: async (ctx, state) => ({ n: (state?.n ?? 0) + 1 }),
    },
  },
});
"""


@dataclass
class Installation:
    """Workflows ``w0``, ``w1``, … with one recording consumer each, on a fake clock."""

    store: SqlStore
    sheets: Sheets
    runtime: Runtime
    clock: ManualClock
    statements: list[str] = field(default_factory=list)

    def scheduler(self, worker: str = "worker", **options: Any) -> Scheduler:
        return Scheduler(self.runtime, worker=worker, lease_ttl_s=10, **options)

    def publish(self, workflow: str, job: str) -> None:
        self.store.publish(
            workflow, Publication(topic="job.queued", message_id=job, title=f"job {job}")
        )

    def recorded(self) -> list[tuple[str, str]]:
        return [tuple(e["params"]["values"]) for e in self.sheets.effects("appendRow")]

    def runs_of(self, workflow: str) -> int:
        return len(self.store.list_runs(workflow=workflow))


@contextmanager
def installation(
    folder: Path, workflows: int, *, ticker: bool = False, url: str | None = None
) -> Iterator[Installation]:
    clock = ManualClock()
    store = open_store(url or f"sqlite:///{folder / 'keep.db'}", clock=clock)
    assert isinstance(store, SqlStore)
    sheets = Sheets(seed={"spreadsheets": {"jobs": {"rows": []}}})
    runtime = Runtime(
        store,
        ConnectorSet([Gmail(), sheets, Slack()]),
        policy=fast_policy(),
        load_workflow=LOADER,
        isolation=InProcessIsolation(),
        now=clock,
    )
    for w in range(workflows):
        runtime.deploy(CONSUMER.replace("NAME", f"w{w}"))
        store.grant_permission(f"w{w}", "sheets.write", actor="test")
    if ticker:
        runtime.deploy(TICKER)
    found = Installation(store, sheets, runtime, clock)
    sa.event.listen(store.engine, "before_cursor_execute", _recorder(found.statements))
    try:
        yield found
    finally:
        store.close()


def _recorder(into: list[str]) -> Callable[..., None]:
    def record(conn: Any, cursor: Any, statement: str, *rest: Any) -> None:
        into.append(statement)

    return record


class Plans:
    """Counts the planning steps a scheduler takes (not those a test asks for with `due`)."""

    def __init__(self, scheduler: Scheduler) -> None:
        self.count = 0
        self.asking = False
        plan = scheduler.planner.plan

        def counted(now: dt.datetime) -> Any:
            if not self.asking:
                self.count += 1
            return plan(now)

        scheduler.planner.plan = counted  # type: ignore[method-assign]
        self.scheduler = scheduler

    def best(self) -> tuple[str, str | None, TaskKind] | None:
        """What the planner would run first now (asked without counting)."""
        self.asking = True
        try:
            due = self.scheduler.due()
        finally:
            self.asking = False
        return (due[0].workflow, due[0].handler, due[0].kind) if due else None


def key(activity: Activity) -> tuple[str, str | None, TaskKind]:
    return (activity.task.workflow, activity.task.handler, activity.task.kind)


@settings(
    max_examples=15,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
    derandomize=True,
)
@given(
    order=st.lists(st.integers(min_value=0, max_value=2), min_size=1, max_size=24),
    drain_runs=st.integers(min_value=1, max_value=6),
    tick_s=st.sampled_from([0.0, 0.5, 1.0, 2.0]),
    drain_s=st.sampled_from([1.5, 4.0, 3600.0]),
)
def test_drains_never_make_the_planners_first_choice_wait_more_than_a_budget(
    tmp_path_factory: pytest.TempPathFactory,
    order: list[int],
    drain_runs: int,
    tick_s: float,
    drain_s: float,
) -> None:
    with installation(tmp_path_factory.mktemp("fair"), 3, ticker=True) as world:
        jobs: dict[str, list[str]] = {f"w{w}": [] for w in range(3)}
        for i, w in enumerate(order):
            jobs[f"w{w}"].append(f"j{i}")
            world.publish(f"w{w}", f"j{i}")
            world.clock.advance(0.001)
        scheduler = world.scheduler(drain_runs=drain_runs, drain_s=drain_s)
        plans = Plans(scheduler)
        waited: dict[tuple[str, str | None, TaskKind], int] = {}
        since_plan, planned_at, ticks = 0, world.clock(), 0
        for _ in range(len(order) * 3 + 20):
            best = plans.best()
            before = plans.count
            activity = scheduler.step()
            if activity is None:
                assert best is None, f"nothing ran while {best} was due"
                break
            if plans.count > before:
                since_plan, planned_at = 1, world.clock()
                assert key(activity) == best, "a plan did not run the planner's first choice"
            else:
                since_plan += 1
                assert since_plan <= drain_runs, "a drain outran its budget of runs"
                assert (world.clock() - planned_at).total_seconds() < drain_s
                assert activity.task.kind is TaskKind.CONSUMER
            ticks += activity.task.kind is TaskKind.PRODUCER
            if best is not None and key(activity) != best:
                waited[best] = waited.get(best, 0) + 1
                assert waited[best] <= drain_runs - 1, f"{best} waited {waited[best]} steps"
            waited.pop(key(activity), None)
            world.clock.advance(tick_s)
        assert ticks >= 1, "the due producer never ran"
        recorded = world.recorded()
        for workflow, expected in jobs.items():
            assert [j for w, j in recorded if w == workflow] == expected
        assert len(recorded) == len(order), "a job was recorded twice"


def scheduler_statements(world: Installation, scheduler: Scheduler) -> Callable[[], int]:
    """The statements the scheduler runs itself, outside the runtime's runs."""
    inside = [0]
    run_consumer = scheduler.runtime.run_consumer

    def counted(workflow: str, handler: str) -> Any:
        start = len(world.statements)
        try:
            return run_consumer(workflow, handler)
        finally:
            inside[0] += len(world.statements) - start

    scheduler.runtime.run_consumer = counted  # type: ignore[method-assign]
    start = len(world.statements)
    return lambda: len(world.statements) - start - inside[0]


def test_a_long_drain_costs_the_scheduler_a_few_statements_per_run(tmp_path: Path) -> None:
    per_run: dict[int, float] = {}
    for drain_runs in (1, 16):
        folder = tmp_path / str(drain_runs)
        folder.mkdir()
        with installation(folder, 2) as world:
            for j in range(48):
                world.publish("w0", f"j{j}")
            scheduler = world.scheduler(drain_runs=drain_runs, drain_s=3600)
            plans = Plans(scheduler)
            own = scheduler_statements(world, scheduler)
            done = scheduler.run_until_idle()
            assert len(done) == 48
            assert all(a.run is not None and a.run.status is RunStatus.COMMITTED for a in done)
            assert plans.count == -(-48 // drain_runs) + 1
            per_run[drain_runs] = own() / len(done)
    assert per_run[16] <= 3.5, per_run
    assert per_run[1] >= 3 * per_run[16], per_run


def test_a_lost_lease_ends_the_drain_and_the_new_holder_runs_the_rest(
    tmp_path: Path, database: str | None
) -> None:
    with installation(tmp_path, 1, url=database) as world:
        for j in range(6):
            world.publish("w0", f"j{j}")
        first = world.scheduler("first", drain_runs=100, drain_s=3600)
        plans = Plans(first)
        for _ in range(2):
            assert first.step() is not None
        assert plans.count == 1
        world.clock.advance(11)
        second = world.scheduler("second")
        taken = second.leases.claim("w0")
        assert taken is not None
        runs = world.runs_of("w0")
        assert first.leases.heartbeat() == ["w0"]
        assert first.step() is None, "the drain ran a workflow whose lease it lost"
        assert world.runs_of("w0") == runs
        assert len(second.run_until_idle()) == 4
        assert sorted(j for _, j in world.recorded()) == [f"j{j}" for j in range(6)]


def test_a_lease_past_half_its_time_ends_the_drain_and_the_plan_renews_it(
    tmp_path: Path,
) -> None:
    with installation(tmp_path, 1) as world:
        for j in range(4):
            world.publish("w0", f"j{j}")
        scheduler = world.scheduler(drain_runs=100, drain_s=3600)
        plans = Plans(scheduler)
        claims: list[str] = []
        acquire = world.store.acquire_lease

        def counted(workflow: str, owner: str, *, ttl: dt.timedelta) -> Lease | None:
            claims.append(workflow)
            return acquire(workflow, owner, ttl=ttl)

        world.store.acquire_lease = counted  # type: ignore[method-assign]
        assert scheduler.step() is not None
        assert scheduler.step() is not None
        assert (plans.count, claims) == (1, ["w0"])
        world.clock.advance(6)
        assert scheduler.step() is not None
        assert (plans.count, claims) == (2, ["w0", "w0"])
        lease = world.store.get_lease("w0")
        assert lease is not None
        assert lease.expires_at == world.clock() + dt.timedelta(seconds=10)


def test_a_failed_run_ends_the_drain_and_its_handler_waits(tmp_path: Path) -> None:
    with installation(tmp_path, 1) as world:
        for j in range(5):
            world.publish("w0", f"j{j}")
        scheduler = world.scheduler(drain_runs=100, drain_s=3600)
        plans = Plans(scheduler)
        assert scheduler.step() is not None
        world.sheets.faults.inject(FaultKind.TRANSIENT, operation="appendRow")
        failed = scheduler.step()
        assert failed is not None
        assert failed.run is not None
        assert failed.run.status is RunStatus.PAUSED_TRANSIENT
        runs = world.runs_of("w0")
        assert scheduler.step() is None, "a new run started while the paused run waits"
        assert plans.count == 2
        assert world.runs_of("w0") == runs
        world.clock.advance(60)
        assert len(scheduler.run_until_idle()) == 4
        assert [j for _, j in world.recorded()] == [f"j{j}" for j in range(5)]


def test_a_workflow_paused_mid_drain_gets_no_further_run(tmp_path: Path) -> None:
    with installation(tmp_path, 1) as world:
        for j in range(5):
            world.publish("w0", f"j{j}")
        scheduler = world.scheduler(drain_runs=100, drain_s=3600)
        assert scheduler.step() is not None
        world.store.pause_workflow("w0", actor="person")
        runs = world.runs_of("w0")
        assert scheduler.step() is None
        assert world.runs_of("w0") == runs
        assert sum(e.status is EventStatus.PENDING for e in world.store.list_events("w0")) == 4


def test_a_new_version_without_the_drained_consumer_ends_the_drain(tmp_path: Path) -> None:
    with installation(tmp_path, 1) as world:
        for j in range(4):
            world.publish("w0", f"j{j}")
        scheduler = world.scheduler(drain_runs=100, drain_s=3600)
        plans = Plans(scheduler)
        assert scheduler.step() is not None
        world.runtime.deploy(
            CONSUMER.replace("NAME", "w0").replace("record: Keep.consumer", "keep: Keep.consumer")
        )
        renamed = scheduler.step()
        assert renamed is not None
        assert renamed.run is not None
        assert (renamed.task.handler, renamed.run.workflow_version) == ("keep", 2)
        assert plans.count == 2
        assert len(scheduler.run_until_idle()) == 2
        assert [j for _, j in world.recorded()] == [f"j{j}" for j in range(4)]
