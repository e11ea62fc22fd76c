"""A durable operation that fails definitely is submitted once per event, never in a loop
(issue 31 part 4): its run ends ``failed:logic`` keeping its reservations, a person is told
the connector's reason, and only a person's retry submits it once more."""

from __future__ import annotations

import datetime as dt
from collections import Counter

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from keep_sdk.conformance import ManualClock
from keep_sdk.connectors import ConnectorSet
from keep_sdk.connectors.builtin import Jobs
from keep_sdk.contract.observations import Escalated, Observation
from keep_sdk.model import BackoffPolicy, EventStatus, HostPolicy, RunStatus
from keep_sdk.plugins import KeepPlugins
from keep_sdk.runtime import PersonActions, Runtime
from keep_sdk.sandbox import InProcessIsolation
from keep_sdk.scheduler import Scheduler
from keep_sdk.stores import Publication, open_store
from tests.durable.harness import REPORT_JOB, T0

WF = "report-job"
OUTCOMES = ("succeed", "fail", "time-out", "run-long")
WAITS_FOR_A_PERSON = (RunStatus.FAILED_LOGIC, RunStatus.PAUSED_TIMEOUT)


class World:
    def __init__(self, slow: bool) -> None:
        self.clock = ManualClock(T0)
        self.store = open_store("memory://", clock=self.clock)
        polls = 10**6 if slow else 1
        self.jobs = Jobs(seed={"pendingPolls": polls, "failing": ["fail"]})
        self.escalations: list[Escalated] = []
        self.runtime = Runtime(
            self.store,
            ConnectorSet([self.jobs]),
            policy=HostPolicy(backoff=BackoffPolicy(base_s=1, cap_s=1, jitter=0)),
            load_workflow=KeepPlugins(load_entry_points=False).load_workflow,
            observe=self._observe,
            now=self.clock,
            deterministic=True,
            isolation=InProcessIsolation(),
        )
        self.runtime.deploy(REPORT_JOB)
        self.store.grant_permission(WF, "jobs.submit", actor="test")

    def _observe(self, observation: Observation) -> None:
        if isinstance(observation, Escalated):
            self.escalations.append(observation)

    def request(self, message_id: str, outcome: str) -> None:
        name = "fail" if outcome == "fail" else "ok"
        self.store.publish(
            WF,
            Publication(
                topic="report.requested",
                message_id=message_id,
                title=f"Report {message_id}",
                payload={"name": name},
            ),
        )

    def work(self, rounds: int, step: dt.timedelta) -> None:
        scheduler = Scheduler(self.runtime, worker="w1")
        try:
            for _ in range(rounds):
                scheduler.run_until_idle()
                self.clock.advance(step.total_seconds())
        finally:
            scheduler.close()

    def submissions(self) -> Counter[str]:
        return Counter(str(e["params"]["input"]["id"]) for e in self.jobs.effects("submit"))


def _settle(world: World, mode: str) -> None:
    if mode == "time-out":
        world.work(4, dt.timedelta(days=1))
    else:
        world.work(12, dt.timedelta(seconds=30))


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    outcomes=st.lists(st.sampled_from(("succeed", "fail")), min_size=1, max_size=4),
    mode=st.sampled_from(("prompt", "time-out", "run-long")),
)
def test_a_failing_durable_operation_is_submitted_once_and_waits_for_a_person(
    outcomes: list[str], mode: str
) -> None:
    world = World(slow=mode != "prompt")
    try:
        for i, outcome in enumerate(outcomes):
            world.request(f"r{i}", outcome)
            world.work(2, dt.timedelta(seconds=5))
        _settle(world, mode)
        assert all(count <= 1 for count in world.submissions().values()), world.submissions()
        runs = world.store.list_runs(workflow=WF)
        for event in world.store.list_events(WF):
            if event.topic != "report.requested":
                continue
            if event.status is EventStatus.CONSUMED:
                continue
            assert event.status is EventStatus.RESERVED, (event.message_id, event.status)
            holder = next(r for r in runs if r.id == event.reserved_by)
            if mode == "run-long":
                assert holder.status is RunStatus.PAUSED_WAITING
            else:
                assert holder.status in WAITS_FOR_A_PERSON, holder.status
        for run in runs:
            if run.status is RunStatus.FAILED_LOGIC:
                told = [e.escalation for e in world.escalations if e.escalation.run_id == run.id]
                assert told
                assert "failed: exit 1" in told[0].reason
                assert told[0].actions == ["retry"]
    finally:
        world.store.close()


def test_a_person_retry_submits_once_more_and_no_more() -> None:
    world = World(slow=False)
    try:
        world.request("r1", "fail")
        world.work(6, dt.timedelta(seconds=30))
        [failed] = world.store.list_runs(workflow=WF)
        assert failed.status is RunStatus.FAILED_LOGIC
        assert world.submissions() == Counter({"r1": 1})
        PersonActions(world.runtime).retry(failed.id, actor="ann")
        world.work(6, dt.timedelta(seconds=30))
        assert world.submissions() == Counter({"r1": 2})
        latest = world.store.list_runs(workflow=WF, newest_first=True, limit=1)[0]
        assert latest.status is RunStatus.FAILED_LOGIC
        assert latest.retry_of == failed.id
        [event] = [e for e in world.store.list_events(WF) if e.topic == "report.requested"]
        assert event.status is EventStatus.RESERVED
        assert event.reserved_by == latest.id
    finally:
        world.store.close()
