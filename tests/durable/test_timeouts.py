"""Park timeouts: the scan, paused:timeout, escalation, and each person's action."""

from __future__ import annotations

import datetime as dt

from keep_sdk.contract.durable import InvocationStatus, NotificationOutcome
from keep_sdk.model import EventStatus, MutationApplied, RunStatus
from keep_sdk.scheduler import Scheduler
from keep_sdk.scheduler._tasks import TaskKind
from tests.durable.harness import DurableEnv

WF = "document-request"
FIFTEEN_DAYS = 15 * 86_400


def timed_out(env: DurableEnv) -> str:
    env.need("m1")
    run_id = env.run()
    assert env.runtime.scan_timeouts() == []
    env.clock.advance(FIFTEEN_DAYS)
    worker = Scheduler(env.runtime, worker="w1")
    done = worker.run_until_idle()
    worker.close()
    assert [a.task.kind for a in done] == [TaskKind.TIMEOUT]
    run = env.store.get_run(run_id)
    assert run.status is RunStatus.PAUSED_TIMEOUT
    assert "no result from ctx.approvals.request by" in (run.error or "")
    return run_id


def test_timeout_pauses_the_run_for_a_person_and_ignores_late_results(env: DurableEnv) -> None:
    run_id = timed_out(env)
    invocation = env.durable.invocation_for_run(run_id)
    assert invocation is not None
    assert invocation.status is InvocationStatus.TIMED_OUT
    late = env.runtime.notify(invocation.correlation_key, {"file": "late.pdf"})
    assert late.notification.outcome is NotificationOutcome.IGNORED
    assert env.store.get_run(run_id).status is RunStatus.PAUSED_TIMEOUT
    assert [e.status for e in env.store.list_events(WF)] == [EventStatus.RESERVED]


def test_extend_makes_it_wait_again_and_a_result_then_applies(env: DurableEnv) -> None:
    run_id = timed_out(env)
    until = env.clock() + dt.timedelta(days=7)
    waiting = env.runtime_actions().extend(run_id, until=until, actor="ann")
    assert waiting.status is RunStatus.PAUSED_WAITING
    invocation = env.durable.invocation_for_run(run_id)
    assert invocation is not None
    assert invocation.timeout_at == until
    assert env.runtime.notify(invocation.correlation_key, {"file": "p.pdf"}).applied
    assert env.store.get_run(run_id).status is RunStatus.COMMITTED


def test_start_again_sends_a_new_request_under_the_same_key(env: DurableEnv) -> None:
    run_id = timed_out(env)
    again = env.runtime_actions().start_again(run_id, actor="ann")
    assert again.status is RunStatus.PAUSED_WAITING
    assert len(env.approvals.effects("request")) == 2
    invocation = env.durable.invocation_for_run(run_id)
    assert invocation is not None
    assert env.runtime.notify(invocation.correlation_key, {"file": "p.pdf"}).applied


def test_supply_skip_and_cancel_after_a_timeout(env: DurableEnv) -> None:
    run_id = timed_out(env)
    ended = env.runtime_actions().supply_result(run_id, {"file": "hand.pdf"}, actor="ann")
    assert ended.status is RunStatus.COMMITTED
    assert ended.mutation_result == MutationApplied(result={"file": "hand.pdf"})


def test_skip_after_a_timeout(env: DurableEnv) -> None:
    run_id = timed_out(env)
    ended = env.runtime_actions().skip_wait(run_id, actor="ann")
    assert ended.status is RunStatus.COMMITTED
    assert ended.mutation_result is not None
    assert ended.mutation_result.status == "skipped"
    assert [e.status for e in env.store.list_events(WF)] == [EventStatus.SKIPPED]


def test_cancel_after_a_timeout(env: DurableEnv) -> None:
    run_id = timed_out(env)
    ended = env.runtime_actions().cancel(run_id, actor="ann")
    assert ended.status is RunStatus.COMMITTED
    invocation = env.durable.invocation_for_run(run_id)
    assert invocation is not None
    assert invocation.status is InvocationStatus.CANCELLED
