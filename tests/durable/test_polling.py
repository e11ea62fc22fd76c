"""Polled durable operations: pending N times then done, claims, append-only attempts."""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator

import pytest

from keep_sdk.contract.durable import AttemptKind, Done, InvocationStatus
from keep_sdk.errors import StoreConflict
from keep_sdk.model import EventStatus, MutationApplied, RunStatus
from keep_sdk.scheduler import Scheduler
from keep_sdk.scheduler._tasks import TaskKind
from tests.durable.harness import JobsEnv, make_jobs_env

WF = "report-job"


@pytest.fixture
def jobs_env(store_url: str) -> Iterator[JobsEnv]:
    environment = make_jobs_env(store_url)
    yield environment
    environment.store.close()


def work(env: JobsEnv, worker: str = "w1", rounds: int = 10) -> list[TaskKind]:
    scheduler = Scheduler(env.runtime, worker=worker)
    done: list[TaskKind] = []
    try:
        for _ in range(rounds):
            done += [a.task.kind for a in scheduler.run_until_idle()]
            env.clock.advance(2)
    finally:
        scheduler.close()
    return done


def test_pending_twice_then_done_commits_with_every_answer_recorded(jobs_env: JobsEnv) -> None:
    jobs_env.request("r1")
    kinds = work(jobs_env)
    assert kinds == [TaskKind.CONSUMER, TaskKind.POLL, TaskKind.POLL, TaskKind.POLL]
    [run] = jobs_env.store.list_runs(workflow=WF)
    assert run.status is RunStatus.COMMITTED
    assert run.mutation_result == MutationApplied(result={"job": "job-1", "output": {"id": "r1"}})
    invocation = jobs_env.durable.invocation_for_run(run.id)
    assert invocation is not None
    assert invocation.status is InvocationStatus.COMPLETED
    attempts = [(a.kind.value, a.outcome) for a in jobs_env.durable.list_attempts(invocation.id)]
    assert attempts == [("start", "pending"), ("poll", "pending"), ("poll", "pending"),
                        ("poll", "done")]  # fmt: skip
    assert [a.seq for a in jobs_env.durable.list_attempts(invocation.id)] == sorted(
        a.seq for a in jobs_env.durable.list_attempts(invocation.id)
    )
    assert len(jobs_env.jobs.effects("submit")) == 1


def test_done_with_an_error_is_a_definite_failure(jobs_env: JobsEnv) -> None:
    jobs_env.request("r1", name="broken")
    work(jobs_env, rounds=5)
    [run] = [r for r in jobs_env.store.list_runs(workflow=WF) if r.handler == "runReport"][:1]
    assert run.status is RunStatus.FAILED_LOGIC
    assert "failed: exit 1" in (run.error or "")
    invocation = jobs_env.durable.invocation_for_run(run.id)
    assert invocation is not None
    assert invocation.status is InvocationStatus.FAILED
    entry = jobs_env.store.ledger_entry_for_run(run.id)
    assert entry is not None
    assert entry.status.value == "failed"
    assert [e.status for e in jobs_env.store.list_events(WF)] != [EventStatus.CONSUMED]


def test_a_poll_failure_is_recorded_and_backed_off(jobs_env: JobsEnv) -> None:
    jobs_env.jobs.faults.inject("transient", operation="poll:submit")
    jobs_env.request("r1")
    work(jobs_env)
    [run] = jobs_env.store.list_runs(workflow=WF)
    assert run.status is RunStatus.COMMITTED
    invocation = jobs_env.durable.invocation_for_run(run.id)
    assert invocation is not None
    outcomes = [a.outcome for a in jobs_env.durable.list_attempts(invocation.id)]
    assert outcomes == ["pending", "error", "pending", "pending", "done"]


def test_two_workers_never_both_integrate_one_done(jobs_env: JobsEnv) -> None:
    jobs_env.request("r1")
    run = jobs_env.runtime.run_consumer(WF, "runReport")
    invocation = jobs_env.durable.invocation_for_run(run.id)
    assert invocation is not None
    now = jobs_env.clock()
    first = jobs_env.durable.claim_invocation(
        invocation.id, "w1", until=now + dt.timedelta(seconds=30)
    )
    assert first is not None
    assert jobs_env.durable.claim_invocation(invocation.id, "w2", until=now) is None
    jobs_env.clock.advance(31)
    taken = jobs_env.durable.claim_invocation(
        invocation.id, "w2", until=jobs_env.clock() + dt.timedelta(seconds=30)
    )
    assert taken is not None
    assert taken.claim_version == first.claim_version + 1
    done = Done(ok=True, result={"job": "job-1"})
    with pytest.raises(StoreConflict, match="taken over"):
        jobs_env.durable.record_start_answer(
            invocation.id, done, kind=AttemptKind.POLL, claim_version=first.claim_version
        )
    jobs_env.durable.record_start_answer(
        invocation.id, done, kind=AttemptKind.POLL, claim_version=taken.claim_version
    )
    with pytest.raises(StoreConflict):
        jobs_env.durable.record_start_answer(
            invocation.id, done, kind=AttemptKind.POLL, claim_version=taken.claim_version
        )
    applied = [a for a in jobs_env.durable.list_attempts(invocation.id) if a.outcome == "done"]
    assert len(applied) == 1
    assert jobs_env.durable.get_invocation(invocation.id).status is InvocationStatus.COMPLETED
