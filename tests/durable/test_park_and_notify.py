"""Park on start, complete by notification: on memory, SQLite and PostgreSQL."""

from __future__ import annotations

import pytest

from keep_sdk.contract.durable import InvocationStatus, NotificationOutcome
from keep_sdk.errors import ActionRefused, InvalidArguments, NotFound
from keep_sdk.model import EventStatus, LedgerStatus, MutationApplied, RunPhase, RunStatus
from keep_sdk.scheduler import Scheduler
from keep_sdk.scheduler._tasks import TaskKind
from tests.durable.harness import DurableEnv

WF = "document-request"


def parked(env: DurableEnv, message_id: str, client: str = "ann@example.com") -> str:
    env.need(message_id, client)
    run_id = env.run()
    run = env.store.get_run(run_id)
    assert (run.status, run.phase) == (RunStatus.PAUSED_WAITING, RunPhase.MUTATING)
    return run_id


def key_of(env: DurableEnv, run_id: str) -> str:
    invocation = env.durable.invocation_for_run(run_id)
    assert invocation is not None
    return invocation.correlation_key


def test_start_persists_then_parks_keeping_reservations_and_no_lease(env: DurableEnv) -> None:
    run_id = parked(env, "m1")
    invocation = env.durable.invocation_for_run(run_id)
    assert invocation is not None
    assert invocation.status is InvocationStatus.ACTIVE
    assert invocation.external_id == "req-1"
    assert invocation.timeout_at is not None
    assert invocation.parked_at == env.clock()
    entry = env.store.ledger_entry_for_run(run_id)
    assert entry is not None
    assert entry.status is LedgerStatus.IN_FLIGHT
    assert [e.status for e in env.store.list_events(WF, topic="document.needed")] == [
        EventStatus.RESERVED
    ]
    assert env.store.active_runs() == []
    assert env.store.get_lease(WF) is None
    requests = env.approvals.snapshot()["requests"]
    assert requests["req-1"]["correlationKey"] == invocation.correlation_key
    with pytest.raises(ActionRefused, match="waits for its durable operation"):
        env.runtime.resume(run_id)


def test_notification_completes_the_run_and_a_duplicate_is_recorded_not_applied(
    env: DurableEnv,
) -> None:
    run_id = parked(env, "m1")
    key = key_of(env, run_id)
    receipt = env.runtime.notify(key, {"file": "passport.pdf"})
    assert receipt.applied
    assert receipt.run is not None
    assert receipt.run.status is RunStatus.COMMITTED
    assert receipt.run.mutation_result == MutationApplied(result={"file": "passport.pdf"})
    received = env.store.list_events(WF, topic="document.received")
    assert [e.payload for e in received] == [{"file": "passport.pdf"}]

    again = env.runtime.notify(key, {"file": "forged.pdf"})
    assert again.notification.outcome is NotificationOutcome.DUPLICATE
    assert again.run is None
    assert env.store.get_run(run_id).mutation_result == MutationApplied(
        result={"file": "passport.pdf"}
    )
    assert len(env.store.list_events(WF, topic="document.received")) == 1
    invocation = env.durable.invocation_for_run(run_id)
    assert invocation is not None
    outcomes = [n.outcome for n in env.durable.list_notifications(invocation.id)]
    assert outcomes == [NotificationOutcome.APPLIED, NotificationOutcome.DUPLICATE]
    attempts = [(a.kind.value, a.outcome) for a in env.durable.list_attempts(invocation.id)]
    assert attempts == [
        ("start", "pending"),
        ("notification", "applied"),
        ("notification", "duplicate"),
    ]


def test_bad_keys_are_refused_and_write_nothing(env: DurableEnv) -> None:
    run_id = parked(env, "m1")
    with pytest.raises(InvalidArguments, match="malformed correlation key"):
        env.runtime.notify("kc-XYZ", {})
    with pytest.raises(NotFound, match="no durable invocation has correlation key"):
        env.runtime.notify("kc-" + "1" * 40, {})
    invocation = env.durable.invocation_for_run(run_id)
    assert invocation is not None
    assert env.durable.list_notifications(invocation.id) == []
    assert env.store.get_run(run_id).status is RunStatus.PAUSED_WAITING


def test_a_parked_run_does_not_block_its_consumer_or_workflow(env: DurableEnv) -> None:
    first = parked(env, "m1", "ann@example.com")
    second = parked(env, "m2", "bob@example.com")
    assert first != second
    assert len(env.approvals.effects("request")) == 2
    assert {r.status for r in env.store.list_runs(workflow=WF)} == {RunStatus.PAUSED_WAITING}


def test_out_of_order_resumes_commit_in_arrival_order_and_state_is_the_last_commit(
    env: DurableEnv,
) -> None:
    first = parked(env, "m1", "ann@example.com")
    second = parked(env, "m2", "bob@example.com")
    assert env.runtime.notify(key_of(env, second), {"file": "bob.pdf"}).applied
    state_after_second = env.store.get_handler(WF, "requestDocument").state
    assert state_after_second == {"received": ["m2"]}
    assert env.runtime.notify(key_of(env, first), {"file": "ann.pdf"}).applied
    assert env.store.get_handler(WF, "requestDocument").state == {"received": ["m1"]}
    received = env.store.list_events(WF, topic="document.received")
    assert [e.message_id for e in received] == ["m2", "m1"]
    assert env.store.get_run(first).mutation_result == MutationApplied(result={"file": "ann.pdf"})
    assert env.store.get_run(second).mutation_result == MutationApplied(result={"file": "bob.pdf"})


def test_a_notification_before_the_park_commits_is_matched_when_it_does(
    env: DurableEnv,
) -> None:
    env.need("m1")
    early: dict[str, object] = {}
    original = env.approvals.request.__func__  # type: ignore[attr-defined]

    def start_and_get_notified(self, args, *, invocation):  # type: ignore[no-untyped-def]
        answer = original(self, args, invocation=invocation)
        receipt = env.runtime.notify(invocation.correlation_key, {"file": "fast.pdf"})
        early["outcome"] = receipt.notification.outcome
        early["run"] = receipt.run
        return answer

    env.approvals.request = start_and_get_notified.__get__(env.approvals)  # type: ignore[method-assign]
    run = env.store.get_run(env.run())
    assert early == {"outcome": NotificationOutcome.PENDING, "run": None}
    assert run.status is RunStatus.COMMITTED
    assert run.mutation_result == MutationApplied(result={"file": "fast.pdf"})


def test_a_worker_delivers_a_recorded_notification(env: DurableEnv) -> None:
    run_id = parked(env, "m1")
    notification = env.runtime.durable.notify(key_of(env, run_id), {"ok": 1}, source="test")
    assert notification.outcome is NotificationOutcome.PENDING
    worker = Scheduler(env.runtime, worker="w1")
    [task] = worker.due()
    assert task.kind is TaskKind.DELIVER
    done = worker.run_until_idle()
    worker.close()
    assert [a.task.kind for a in done] == [TaskKind.DELIVER]
    assert env.store.get_run(run_id).status is RunStatus.COMMITTED
    assert env.durable.deliverable_notifications() == []


def test_cancel_skips_next_and_a_late_notification_is_ignored(env: DurableEnv) -> None:
    run_id = parked(env, "m1")
    key = key_of(env, run_id)
    ended = env.runtime_actions().cancel(run_id, actor="ann", reason="client left")
    assert ended.status is RunStatus.COMMITTED
    assert ended.mutation_result is not None
    assert ended.mutation_result.status == "skipped"
    assert [e.status for e in env.store.list_events(WF)] == [EventStatus.SKIPPED]
    assert env.approvals.snapshot()["requests"]["req-1"]["status"] == "withdrawn"
    late = env.runtime.notify(key, {"file": "late.pdf"})
    assert late.notification.outcome is NotificationOutcome.IGNORED
    assert env.store.get_run(run_id) == ended
    invocation = env.durable.invocation_for_run(run_id)
    assert invocation is not None
    assert invocation.status is InvocationStatus.CANCELLED
    kinds = [(a.kind.value, a.outcome) for a in env.durable.list_attempts(invocation.id)]
    assert ("cancel", "cancelled externally") in kinds
    assert [a.action for a in env.store.audit_log()][-1] == "durable:cancel"


def test_supply_result_by_hand(env: DurableEnv) -> None:
    run_id = parked(env, "m1")
    ended = env.runtime_actions().supply_result(run_id, {"file": "by-hand.pdf"}, actor="ann")
    assert ended.status is RunStatus.COMMITTED
    assert ended.mutation_result == MutationApplied(result={"file": "by-hand.pdf"})
