"""The scheduler on a fake clock: what is due, in which order, under which lease."""

from __future__ import annotations

import datetime as dt
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from keep_sdk.conformance import ManualClock
from keep_sdk.connectors import ConnectorSet
from keep_sdk.connectors.builtin import FaultKind, Gmail, Sheets, Slack
from keep_sdk.errors import InternalError
from keep_sdk.model import EventStatus, HandlerKind, RunStatus
from keep_sdk.plugins import KeepPlugins
from keep_sdk.runtime import Runtime
from keep_sdk.sandbox import InProcessIsolation
from keep_sdk.scheduler import LeaseKeeper, Scheduler, TaskKind
from keep_sdk.stores import Lease, Publication, WorkflowRecord, open_store
from tests.runtime.harness import MAIL_TO_SHEET, Env, fast_policy, make_env

LOADER = KeepPlugins(load_entry_points=False).load_workflow

CRON_DIGEST = """
export default Keep.workflow({
  name: "digest",
  topics: { "digest.due": {} },
  producers: {
    bell: {
      schedule: { cron: "0 17 * * *" },
      handler: async (ctx, state) => ({ rang: (state?.rang ?? 0) + 1 }),
    },
  },
});
"""


@pytest.fixture(params=["memory", "sqlite"])
def env(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Env]:
    url = "memory://" if request.param == "memory" else f"sqlite:///{tmp_path / 'keep.db'}"
    environment = make_env(url)
    yield environment
    environment.store.close()


def kinds(scheduler: Scheduler) -> list[tuple[TaskKind, str | None]]:
    return [(t.kind, t.handler) for t in scheduler.due()]


def test_a_fresh_deploy_runs_the_producer_then_every_event_in_order(env: Env) -> None:
    scheduler = Scheduler(env.runtime)
    done = scheduler.run_until_idle()
    assert [a.task.kind for a in done] == [TaskKind.PRODUCER] + [TaskKind.CONSUMER] * 3
    assert env.rows() == [
        ["sender1@example.com", "Invoice 1"],
        ["sender2@example.com", "Invoice 2"],
        ["sender3@example.com", "Invoice 3"],
    ]
    assert scheduler.due() == []
    assert scheduler.next_due() == env.clock() + dt.timedelta(minutes=5)


def test_consumers_come_before_producers(env: Env) -> None:
    env.publish("early")
    scheduler = Scheduler(env.runtime)
    assert kinds(scheduler) == [(TaskKind.CONSUMER, "appendRow"), (TaskKind.PRODUCER, "pollEmail")]


def test_every_trigger_of_a_consumer_coalesces_into_one_task(env: Env) -> None:
    for i in range(5):
        env.publish(f"m{i}")
    env.store.set_wake_at("mail-to-sheet", "appendRow", env.clock())
    scheduler = Scheduler(env.runtime)
    assert kinds(scheduler).count((TaskKind.CONSUMER, "appendRow")) == 1


def test_the_consumer_with_the_oldest_pending_event_goes_first(tmp_path: Path) -> None:
    env = make_env("memory://")
    second = MAIL_TO_SHEET.replace('name: "mail-to-sheet"', 'name: "second"')
    env.runtime.deploy(second)
    env.store.grant_permission("second", "sheets.write", actor="test")
    env.store.publish(
        "second",
        Publication(
            topic="email.received",
            message_id="a",
            title="A",
            payload={"from": "a@x", "subject": "s"},
        ),
    )
    env.clock.advance(1)
    env.publish("b")
    scheduler = Scheduler(env.runtime)
    consumers = [t.workflow for t in scheduler.due() if t.kind is TaskKind.CONSUMER]
    assert consumers == ["second", "mail-to-sheet"]


def test_a_missed_hour_of_an_interval_producer_runs_once(env: Env) -> None:
    scheduler = Scheduler(env.runtime)
    scheduler.run_until_idle()
    env.clock.advance(3600)
    done = scheduler.run_until_idle()
    assert [a.task.kind for a in done] == [TaskKind.PRODUCER]
    assert scheduler.next_due() == env.clock() + dt.timedelta(minutes=5)


def test_a_cron_producer_waits_for_its_first_fire_time(env: Env) -> None:
    env.runtime.deploy(CRON_DIGEST)
    scheduler = Scheduler(env.runtime)
    scheduler.run_until_idle()
    bell = env.store.get_handler("digest", "bell")
    assert not bell.has_state
    assert bell.next_run_at == dt.datetime(2026, 11, 22, 17, 0, tzinfo=dt.UTC)
    env.clock.set(dt.datetime(2026, 11, 22, 17, 0, 30, tzinfo=dt.UTC))
    done = scheduler.run_until_idle()
    assert [a.task.kind for a in done if a.task.workflow == "digest"] == [TaskKind.PRODUCER]
    assert env.store.get_handler("digest", "bell").state == {"rang": 1}


def test_a_paused_workflow_gets_no_work_until_resumed(env: Env) -> None:
    env.actions.pause("mail-to-sheet", actor="test")
    env.publish("m1")
    scheduler = Scheduler(env.runtime)
    assert scheduler.run_until_idle() == []
    env.actions.resume("mail-to-sheet", actor="test")
    assert len(scheduler.run_until_idle()) == 4


def test_a_paused_run_holds_its_consumer_back_until_its_backoff_ends(env: Env) -> None:
    env.sheets.faults.inject(FaultKind.TRANSIENT, operation="appendRow")
    scheduler = Scheduler(env.runtime)
    done = scheduler.run_until_idle()
    paused = done[-1].run
    assert paused is not None
    assert paused.status is RunStatus.PAUSED_TRANSIENT
    assert paused.resume_at == env.clock() + dt.timedelta(seconds=1)
    env.publish("m9")
    assert [t.kind for t in scheduler.due()] == []
    env.clock.advance(1)
    assert [t.kind for t in scheduler.due()][:1] == [TaskKind.RESUME]
    scheduler.run_until_idle()
    assert len(env.rows()) == 4
    assert set(env.statuses().values()) == {EventStatus.CONSUMED}


def test_a_backoff_survives_a_restart(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'keep.db'}"
    backing = tmp_path / "doubles.db"
    first = make_env(url, backing=backing)
    first.sheets.faults.inject(FaultKind.TRANSIENT, operation="appendRow")
    Scheduler(first.runtime, worker="one").run_until_idle()
    [paused] = first.store.list_runs(status=RunStatus.PAUSED_TRANSIENT)
    first.store.close()

    clock = ManualClock(first.clock())
    store = open_store(url, clock=clock)
    connectors = ConnectorSet(
        [Gmail(backing=backing), Sheets(backing=backing), Slack(backing=backing)]
    )
    runtime = Runtime(
        store,
        connectors,
        load_workflow=LOADER,
        policy=fast_policy(),
        now=clock,
        deterministic=True,
        isolation=InProcessIsolation(),
    )
    scheduler = Scheduler(runtime, worker="two")
    assert scheduler.due() == []
    assert scheduler.next_due() == paused.resume_at
    assert paused.resume_at is not None
    clock.set(paused.resume_at)
    done = scheduler.run_until_idle()
    assert done[0].task.kind is TaskKind.RESUME
    assert done[0].task.run_id == paused.id
    assert store.get_run(paused.id).status is RunStatus.COMMITTED
    assert len(Sheets(backing=backing).effects("appendRow")) == 3
    store.close()


def test_a_failed_run_holds_its_handler_until_a_new_version(env: Env) -> None:
    broken = MAIL_TO_SHEET.replace("values: [prepared.data.from", "values: [prepared.data.x.y")
    env.runtime.deploy(broken)
    env.publish("m1")
    scheduler = Scheduler(env.runtime)
    scheduler.run_until_idle()
    [failed] = env.store.list_runs(status=RunStatus.FAILED_LOGIC)
    assert failed.handler == "appendRow"
    assert TaskKind.CONSUMER not in [t.kind for t in scheduler.due()]
    env.runtime.deploy(MAIL_TO_SHEET)
    retry = [t for t in scheduler.due() if t.kind is TaskKind.RETRY]
    assert [t.run_id for t in retry] == [failed.id]
    scheduler.run_until_idle()
    assert set(env.statuses().values()) == {EventStatus.CONSUMED}


def test_a_live_lease_keeps_other_workers_away_and_an_expired_one_is_taken_over(
    env: Env,
) -> None:
    dead = Scheduler(env.runtime, worker="dead", lease_ttl_s=10)
    assert dead.leases.claim("mail-to-sheet") is not None
    orphan = env.store.begin_run(
        "mail-to-sheet", "appendRow", HandlerKind.CONSUMER, input_state=None
    )
    survivor = Scheduler(env.runtime, worker="survivor", lease_ttl_s=10)
    assert [t.kind for t in survivor.due()] == [TaskKind.RECOVER]
    assert survivor.step() is None
    env.clock.advance(10)
    recovered = survivor.step()
    assert recovered is not None
    assert recovered.task.kind is TaskKind.RECOVER
    assert env.store.get_run(orphan.id).status is RunStatus.CRASHED
    lease = env.store.get_lease("mail-to-sheet")
    assert lease is not None
    assert lease.owner == "survivor"
    survivor.run_until_idle()
    assert len(env.rows()) == 3
    survivor.close()
    released = env.store.get_lease("mail-to-sheet")
    assert released is None or released.expired(env.clock())


def test_leases_of_workflows_without_work_are_released(env: Env) -> None:
    scheduler = Scheduler(env.runtime, worker="w")
    scheduler.run_until_idle()
    assert scheduler.leases.held == []


def test_heartbeats_extend_held_leases_and_report_lost_ones(env: Env) -> None:
    scheduler = Scheduler(env.runtime, worker="w", lease_ttl_s=5)
    first = scheduler.leases.claim("mail-to-sheet")
    assert first is not None
    env.clock.advance(3)
    assert scheduler.leases.heartbeat() == []
    renewed = env.store.get_lease("mail-to-sheet")
    assert renewed is not None
    assert renewed.expires_at == env.clock() + dt.timedelta(seconds=5)
    env.clock.advance(6)
    assert Scheduler(env.runtime, worker="other").leases.claim("mail-to-sheet") is not None
    assert scheduler.leases.heartbeat() == ["mail-to-sheet"]
    assert scheduler.leases.held == []


def test_run_until_idle_fails_loudly_instead_of_spinning(env: Env) -> None:
    with pytest.raises(InternalError, match="did not become idle after 2 steps"):
        Scheduler(env.runtime).run_until_idle(max_steps=2)


def test_run_forever_stops_when_asked_and_releases_its_leases(env: Env) -> None:
    scheduler = Scheduler(env.runtime, worker="w")
    stop = threading.Event()
    seen = []
    scheduler.run_forever(stop=stop, poll_s=0.01, on_activity=seen.append, on_idle=stop.set)
    assert len(seen) == 4
    assert scheduler.leases.held == []


def test_activities_describe_what_happened_in_the_users_terms(env: Env) -> None:
    done = Scheduler(env.runtime).run_until_idle()
    lines = [a.describe() for a in done]
    assert lines[0] == "mail-to-sheet/pollEmail: checked for new input"
    assert lines[1] == (
        "mail-to-sheet/appendRow: Add row for sender1@example.com: done (rowId=row-1, rowNumber=1)"
    )


def test_the_heartbeat_thread_keeps_a_lease_alive_past_its_ttl(tmp_path: Path) -> None:
    """On a manual clock: the thread's beats, not the wall clock, decide whether the lease lives.

    The clock moves only between beats the test has waited for, so a loaded
    machine makes the test slower, never wrong.
    """
    clock = ManualClock()
    store = open_store(f"sqlite:///{tmp_path / 'keep.db'}", clock=clock)
    beats = threading.Condition()
    beaten = 0
    heartbeat = store.heartbeat_lease

    def counting(lease: Lease, *, ttl: dt.timedelta) -> Lease:
        nonlocal beaten
        try:
            return heartbeat(lease, ttl=ttl)
        finally:
            with beats:
                beaten += 1
                beats.notify_all()

    def two_more_beats() -> None:
        """Wait until a beat has started and ended after this call (the second one has)."""
        with beats:
            target = beaten + 2
            assert beats.wait_for(lambda: beaten >= target, timeout=60), "the thread stopped"

    store.heartbeat_lease = counting  # type: ignore[method-assign]
    ttl = dt.timedelta(seconds=10)
    keeper = LeaseKeeper(store, "w", ttl=ttl, clock=clock)
    first = keeper.claim("wf")
    assert first is not None
    with keeper.heartbeats(0.01):
        for _ in range(3):
            clock.advance(6)
            two_more_beats()
        lease = store.get_lease("wf")
        assert lease is not None
        assert lease.owner == "w"
        assert clock() > first.expires_at
        assert not lease.expired(clock())
        assert lease.expires_at > first.expires_at
    assert keeper.held == ["wf"]
    clock.advance(ttl.total_seconds())
    taken = LeaseKeeper(store, "other", ttl=ttl, clock=clock).claim("wf")
    assert taken is not None
    assert taken.owner == "other"
    assert keeper.heartbeat() == ["wf"]
    store.close()


def test_a_worker_reports_an_error_escaping_a_step_and_carries_on(env: Env) -> None:
    scheduler = Scheduler(env.runtime, worker="w")
    real = env.store.list_workflows
    failures = iter([RuntimeError("connection reset")])

    def flaky() -> list[WorkflowRecord]:
        for failure in failures:
            raise failure
        return real()

    env.store.list_workflows = flaky  # type: ignore[method-assign]
    errors: list[Exception] = []
    stop = threading.Event()
    seen = []
    scheduler.run_forever(
        stop=stop, poll_s=0.01, on_activity=seen.append, on_idle=stop.set, on_error=errors.append
    )
    assert [str(e) for e in errors] == ["connection reset"]
    assert len(seen) == 4


def test_without_an_error_handler_an_error_stops_the_loop(env: Env) -> None:
    def broken() -> list[WorkflowRecord]:
        raise RuntimeError("connection reset")

    env.store.list_workflows = broken  # type: ignore[method-assign]
    with pytest.raises(RuntimeError, match="connection reset"):
        Scheduler(env.runtime).run_forever(poll_s=0.01)


def test_a_lease_with_more_than_half_its_time_left_is_not_written_again(env: Env) -> None:
    calls: list[str] = []
    acquire = env.store.acquire_lease

    def counting(workflow: str, owner: str, *, ttl: dt.timedelta) -> Lease | None:
        calls.append(workflow)
        return acquire(workflow, owner, ttl=ttl)

    env.store.acquire_lease = counting  # type: ignore[method-assign]
    keeper = LeaseKeeper(env.store, "w", ttl=dt.timedelta(seconds=10), clock=env.clock)
    first = keeper.claim("mail-to-sheet")
    env.clock.advance(4)
    assert keeper.claim("mail-to-sheet") == first
    assert calls == ["mail-to-sheet"]
    env.clock.advance(2)
    renewed = keeper.claim("mail-to-sheet")
    assert calls == ["mail-to-sheet", "mail-to-sheet"]
    assert renewed is not None
    assert first is not None
    assert renewed.expires_at == env.clock() + dt.timedelta(seconds=10)
