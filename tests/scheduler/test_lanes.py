"""A worker with `concurrency` > 1 runs runs of different workflows at once, never two of
one workflow, and loses or repeats nothing.

Real QuickJS, a real SQLite file (its writes group-committed), a fake clock. Each task the
scheduler performs is watched: which workflows are in flight at that moment.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from keep_sdk.errors import ConfigurationError
from keep_sdk.model import RunStatus
from keep_sdk.scheduler import Activity, Scheduler, Task
from tests.scheduler.test_draining import Installation, installation


class InFlight:
    """Wraps a scheduler's `_perform`: fails a task started while its workflow is already in
    flight, and remembers the most workflows ever in flight at once."""

    def __init__(self, scheduler: Scheduler) -> None:
        self.lock = threading.Lock()
        self.now: set[str] = set()
        self.most = 0
        self.overlaps: list[str] = []
        perform = scheduler._perform

        def watched(task: Task) -> Activity:
            with self.lock:
                if task.workflow in self.now:
                    self.overlaps.append(task.workflow)
                self.now.add(task.workflow)
                self.most = max(self.most, len(self.now))
            try:
                return perform(task)
            finally:
                with self.lock:
                    self.now.discard(task.workflow)

        scheduler._perform = watched  # type: ignore[method-assign]


@contextmanager
def world(tmp_path_factory: pytest.TempPathFactory, workflows: int) -> Iterator[Installation]:
    with installation(tmp_path_factory.mktemp("lanes"), workflows) as found:
        yield found


def work_until(w: Installation, scheduler: Scheduler, *, recorded: int, **options: Any) -> None:
    """Run `scheduler` as a worker (`run_forever` on a thread) until the sheet holds
    `recorded` rows (at most a minute), then stop it and wait for it to end."""
    stop = threading.Event()
    thread = threading.Thread(
        target=scheduler.run_forever, kwargs={"stop": stop, "poll_s": 0.05, **options}
    )
    thread.start()
    deadline = time.monotonic() + 60
    while len(w.recorded()) < recorded and time.monotonic() < deadline:
        time.sleep(0.02)
    stop.set()
    thread.join(30)
    assert not thread.is_alive(), "the worker did not stop"


@settings(
    max_examples=12,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
    derandomize=True,
)
@given(
    workflows=st.integers(min_value=2, max_value=5),
    order=st.lists(st.integers(min_value=0, max_value=4), min_size=1, max_size=30),
    concurrency=st.integers(min_value=2, max_value=4),
    drain_runs=st.integers(min_value=1, max_value=4),
)
def test_lanes_record_every_job_once_in_order_and_never_run_one_workflow_twice_at_once(
    tmp_path_factory: pytest.TempPathFactory,
    workflows: int,
    order: list[int],
    concurrency: int,
    drain_runs: int,
) -> None:
    with world(tmp_path_factory, workflows) as w:
        jobs: dict[str, list[str]] = {f"w{i}": [] for i in range(workflows)}
        for n, i in enumerate(order):
            name = f"w{i % workflows}"
            jobs[name].append(f"j{n}")
            w.publish(name, f"j{n}")
            w.clock.advance(0.001)
        scheduler = w.scheduler(concurrency=concurrency, drain_runs=drain_runs)
        flight = InFlight(scheduler)
        done = scheduler.run_until_idle()
        scheduler.close()
        assert flight.overlaps == []
        assert flight.most <= concurrency
        recorded = w.recorded()
        for name, expected in jobs.items():
            assert [j for wf, j in recorded if wf == name] == expected
        assert len(recorded) == len(order), "a job was recorded twice"
        assert sum(a.run is not None for a in done) == len(order)
        assert all(a.run.status is RunStatus.COMMITTED for a in done if a.run is not None)
        assert scheduler.due() == []


def test_four_lanes_over_a_backlog_of_five_workflows_on_either_database(
    tmp_path: Path, database: str | None
) -> None:
    with installation(tmp_path, 5, url=database) as w:
        for n in range(30):
            w.publish(f"w{n % 5}", f"j{n}")
        scheduler = w.scheduler(concurrency=4)
        flight = InFlight(scheduler)
        scheduler.run_until_idle()
        scheduler.close()
        assert flight.overlaps == []
        for i in range(5):
            assert [j for wf, j in w.recorded() if wf == f"w{i}"] == [
                f"j{n}" for n in range(i, 30, 5)
            ]
        assert len(w.recorded()) == 30


def test_runs_of_different_workflows_are_in_flight_at_the_same_time(
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    """The first task of each of two workflows waits for the other to start: a scheduler
    that ran them one after another would time out here."""
    with world(tmp_path_factory, 2) as w:
        w.publish("w0", "a")
        w.publish("w1", "b")
        scheduler = w.scheduler(concurrency=2)
        meet = threading.Barrier(2, timeout=10)
        perform = scheduler._perform

        def meeting(task: Task) -> Activity:
            meet.wait()
            return perform(task)

        scheduler._perform = meeting  # type: ignore[method-assign]
        done = scheduler.run_until_idle()
        scheduler.close()
        assert sorted(a.task.workflow for a in done) == ["w0", "w1"]
        assert sorted(w.recorded()) == [("w0", "a"), ("w1", "b")]


def test_a_workflow_goes_back_to_the_lane_that_ran_it_and_keeps_its_realm(
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    """Realms are kept per thread: three workflows over three rounds each run on one lane
    thread only, and the lanes outlive `run_until_idle`."""
    with world(tmp_path_factory, 3) as w:
        scheduler = w.scheduler(concurrency=3)
        threads: dict[str, set[str]] = {f"w{i}": set() for i in range(3)}
        perform = scheduler._perform

        def placed(task: Task) -> Activity:
            threads[task.workflow].add(threading.current_thread().name)
            return perform(task)

        scheduler._perform = placed  # type: ignore[method-assign]
        for round_ in range(3):
            for i in range(3):
                w.publish(f"w{i}", f"r{round_}-{i}")
            scheduler.run_until_idle()
        scheduler.close()
        assert all(len(names) == 1 for names in threads.values()), threads
        assert len(set().union(*threads.values())) == 3
        assert len(w.recorded()) == 9


def test_a_worker_with_lanes_works_until_stopped_and_then_holds_nothing(
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    with world(tmp_path_factory, 4) as w:
        for n in range(12):
            w.publish(f"w{n % 4}", f"j{n}")
        scheduler = w.scheduler(concurrency=3)
        seen: list[Activity] = []
        work_until(w, scheduler, recorded=12, on_activity=seen.append)
        assert sorted(j for _, j in w.recorded()) == sorted(f"j{n}" for n in range(12))
        assert sum(a.run is not None for a in seen) == 12
        assert scheduler.leases.held == []
        mine = [lease for lease in w.store.list_leases() if lease.owner == scheduler.worker]
        assert mine, "the worker never leased anything"
        assert [lease for lease in mine if not lease.expired(w.clock())] == []


def test_a_lane_that_fails_stops_run_until_idle_after_the_other_lanes_finish(
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    with world(tmp_path_factory, 3) as w:
        for n in range(6):
            w.publish(f"w{n % 3}", f"j{n}")
        scheduler = w.scheduler(concurrency=3)
        perform = scheduler._perform

        def failing(task: Task) -> Activity:
            if task.workflow == "w1":
                raise RuntimeError("a bug in the runtime")
            return perform(task)

        scheduler._perform = failing  # type: ignore[method-assign]
        with pytest.raises(RuntimeError, match="a bug in the runtime"):
            scheduler.run_until_idle()
        assert not [r for r in w.store.list_runs() if r.status is RunStatus.ACTIVE]
        scheduler._perform = perform  # type: ignore[method-assign]
        scheduler.run_until_idle()
        scheduler.close()
        assert sorted(j for _, j in w.recorded()) == sorted(f"j{n}" for n in range(6))


def test_a_worker_with_lanes_reports_a_lane_error_and_carries_on(
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    with world(tmp_path_factory, 2) as w:
        w.publish("w0", "a")
        w.publish("w1", "b")
        scheduler = w.scheduler(concurrency=2)
        perform = scheduler._perform
        failed = threading.Event()
        errors: list[Exception] = []

        def once(task: Task) -> Activity:
            if task.workflow == "w1" and not failed.is_set():
                failed.set()
                raise RuntimeError("once")
            return perform(task)

        scheduler._perform = once  # type: ignore[method-assign]
        work_until(w, scheduler, recorded=2, on_error=errors.append)
        assert sorted(w.recorded()) == [("w0", "a"), ("w1", "b")]
        assert [str(e) for e in errors] == ["once"]


@pytest.mark.parametrize("concurrency", [0, -2])
def test_a_concurrency_below_one_is_refused(tmp_path: Path, concurrency: int) -> None:
    with installation(tmp_path, 1) as w, pytest.raises(ConfigurationError) as refused:
        w.scheduler(concurrency=concurrency)
    assert str(refused.value) == (
        "a worker's concurrency is the number of workflows it runs at once: "
        f"at least 1, not {concurrency}"
    )
