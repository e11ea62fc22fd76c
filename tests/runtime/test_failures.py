"""Failure routing and the mutation ledger: every row of the tables, every reconcile path."""

from __future__ import annotations

import pytest

from keep_sdk.connectors.builtin import FaultKind
from keep_sdk.errors import ActionRefused
from keep_sdk.model import EventStatus, FailureKind, LedgerStatus, RunPhase, RunStatus
from keep_sdk.plugins import Escalated
from keep_sdk.sandbox import InProcessIsolation
from tests.runtime.harness import MAIL_TO_SHEET, Env, make_env

SLACK_SOURCE = MAIL_TO_SHEET.replace(
    """await ctx.sheets.appendRow({
          spreadsheetId: "reports",
          values: [prepared.data.from, prepared.data.subject],
        });""",
    "await ctx.slack.postMessage("
    '{ channel: "#finance", text: `Mail from ${prepared.data.from}` });',
).replace("Row ${mutationResult.result.rowId} for", "Posted for")


def run(env: Env):  # type: ignore[no-untyped-def]
    return env.runtime.run_consumer("mail-to-sheet", "appendRow")


def test_transient_read_in_prepare_pauses_then_resumes_from_the_same_phase(
    env: Env,
) -> None:
    source = MAIL_TO_SHEET.replace(
        'const [e] = await ctx.peek("email.received", { limit: 1 });',
        "await ctx.gmail.search({});\n"
        '        const [e] = await ctx.peek("email.received", { limit: 1 });',
    )
    env.runtime.deploy(source)
    env.publish("m1")
    env.gmail.faults.inject(FaultKind.TRANSIENT, operation="search")
    paused = run(env)
    assert (paused.status, paused.phase) == (RunStatus.PAUSED_TRANSIENT, RunPhase.PREPARING)
    assert paused.failure is FailureKind.TRANSIENT
    assert paused.resume_at is not None
    assert paused.resume_at > env.clock()
    done = env.runtime.resume(paused.id)
    assert done.status is RunStatus.COMMITTED
    assert env.rows() == [["m1@example.com", "Hi"]]


def test_transient_failure_of_the_mutation_keeps_the_entry_and_reissues_the_same_key(
    env: Env,
) -> None:
    env.publish("m1")
    env.sheets.faults.inject(FaultKind.TRANSIENT, operation="appendRow")
    paused = run(env)
    assert (paused.status, paused.phase) == (RunStatus.PAUSED_TRANSIENT, RunPhase.MUTATING)
    [entry] = env.store.list_ledger()
    assert entry.status is LedgerStatus.IN_FLIGHT
    assert env.statuses() == {"m1": EventStatus.RESERVED}
    done = env.runtime.resume(paused.id)
    assert done.status is RunStatus.COMMITTED
    assert [e["idempotencyKey"] for e in env.sheets.effects()] == [entry.idempotency_key]


def test_a_missing_grant_pauses_for_approval_and_granting_resumes(store_url: str) -> None:
    env = make_env(store_url, grants=("gmail.read",))
    env.publish("m1")
    paused = run(env)
    assert (paused.status, paused.phase) == (RunStatus.PAUSED_APPROVAL, RunPhase.MUTATING)
    assert "sheets.write" in (paused.error or "")
    assert env.store.list_ledger() == []
    assert any(isinstance(o, Escalated) for o in env.observed)
    [resumed] = env.actions.grant("mail-to-sheet", "sheets.write", actor="alice")
    assert resumed.status is RunStatus.COMMITTED
    assert len(env.sheets.effects()) == 1
    assert env.store.audit_log(workflow="mail-to-sheet")[-1].actor == "alice"


def test_permission_denied_by_the_service_pauses_for_approval(env: Env) -> None:
    env.publish("m1")
    env.sheets.faults.inject(FaultKind.PERMISSION_DENIED, operation="appendRow")
    paused = run(env)
    assert paused.status is RunStatus.PAUSED_APPROVAL
    assert paused.failure is FailureKind.PERMISSION
    assert env.runtime.resume(paused.id).status is RunStatus.COMMITTED
    assert len(env.sheets.effects()) == 1


def test_a_definite_failure_fails_the_mutation_and_releases_the_events(env: Env) -> None:
    env.publish("m1")
    env.sheets.faults.inject(FaultKind.FAILURE, operation="appendRow")
    failed = run(env)
    assert (failed.status, failed.failure) == (RunStatus.FAILED_LOGIC, FailureKind.PRECONDITION)
    [entry] = env.store.list_ledger()
    assert entry.status is LedgerStatus.FAILED
    assert env.statuses() == {"m1": EventStatus.PENDING}
    assert run(env).status is RunStatus.COMMITTED
    assert len(env.sheets.effects()) == 1


def test_a_timeout_after_the_effect_reconciles_as_applied_without_rerunning_mutate(
    env: Env,
) -> None:
    env.publish("m1")
    env.sheets.faults.inject(FaultKind.TIMEOUT_AFTER_EFFECT, operation="appendRow")
    done = run(env)
    assert done.status is RunStatus.COMMITTED
    assert len(env.sheets.effects()) == 1
    assert env.store.list_ledger()[0].status is LedgerStatus.APPLIED
    assert env.statuses("row.created") == {"row:m1": EventStatus.PENDING}


def test_a_timeout_before_the_effect_reconciles_as_failed_and_reissues_once(env: Env) -> None:
    env.publish("m1")
    env.sheets.faults.inject(FaultKind.TIMEOUT_BEFORE_EFFECT, operation="appendRow")
    done = run(env)
    assert done.status is RunStatus.COMMITTED
    assert len(env.sheets.effects()) == 1


def test_a_reconcile_that_cannot_tell_pauses_and_the_loop_settles_it_later(env: Env) -> None:
    env.publish("m1")
    env.sheets.faults.inject(FaultKind.TIMEOUT_AFTER_EFFECT, operation="appendRow")
    env.sheets.faults.inject(FaultKind.TRANSIENT, operation="reconcile:appendRow")
    paused = run(env)
    assert paused.status is RunStatus.PAUSED_RECONCILIATION
    [entry] = env.store.list_ledger()
    assert entry.status is LedgerStatus.NEEDS_RECONCILE
    assert env.store.due_reconciliations(env.clock()) == []
    env.clock.advance(11)
    assert [e.id for e in env.store.due_reconciliations(env.clock())] == [entry.id]
    settled = env.runtime.reconcile(entry.id)
    assert settled.status is LedgerStatus.APPLIED
    assert env.store.get_run(paused.id).status is RunStatus.COMMITTED
    assert len(env.sheets.effects()) == 1


def test_reconcile_attempts_run_out_into_an_escalated_indeterminate_mutation(env: Env) -> None:
    env.publish("m1")
    env.sheets.faults.inject(FaultKind.TIMEOUT_AFTER_EFFECT, operation="appendRow")
    env.sheets.faults.inject(FaultKind.TRANSIENT, operation="reconcile:appendRow", times=None)
    paused = run(env)
    entry = env.store.list_ledger()[0]
    for _ in range(5):
        env.clock.advance(120)
        entry = env.runtime.reconcile(entry.id)
    assert entry.status is LedgerStatus.INDETERMINATE
    assert env.store.get_run(paused.id).status is RunStatus.PAUSED_RECONCILIATION
    [escalation] = [o.escalation for o in env.observed if isinstance(o, Escalated)]
    assert escalation.actions == ["retry", "didnt-happen", "skip"]
    env.sheets.faults.clear()
    done = env.actions.try_again(paused.id, actor="bob")
    assert done.status is RunStatus.COMMITTED
    assert len(env.sheets.effects()) == 1
    assert env.store.get_run(paused.id).mutation_result.result == {  # type: ignore[union-attr]
        "rowId": "row-1",
        "rowNumber": 1,
    }


@pytest.fixture
def escalated(store_url: str) -> tuple[Env, str]:
    env = make_env(store_url, source=SLACK_SOURCE)
    env.publish("m1")
    env.slack.faults.inject(FaultKind.TIMEOUT_BEFORE_EFFECT, operation="postMessage")
    paused = run(env)
    assert paused.status is RunStatus.PAUSED_RECONCILIATION
    assert env.store.list_ledger()[0].status is LedgerStatus.INDETERMINATE
    return env, paused.id


def test_an_uncertain_mutation_without_reconcile_is_escalated(
    escalated: tuple[Env, str],
) -> None:
    env, _ = escalated
    [escalation] = [o.escalation for o in env.observed if isinstance(o, Escalated)]
    assert escalation.actions == ["didnt-happen", "skip"]
    assert escalation.reason.startswith("Add row for m1@example.com")


def test_try_again_is_refused_when_the_operation_cannot_reconcile(
    escalated: tuple[Env, str],
) -> None:
    env, run_id = escalated
    with pytest.raises(ActionRefused, match="choose --didnt-happen or --skip"):
        env.actions.try_again(run_id, actor="bob")


def test_didnt_happen_reruns_mutate_in_a_retry_run_with_the_same_prepare_result(
    escalated: tuple[Env, str],
) -> None:
    env, run_id = escalated
    retry = env.actions.didnt_happen(run_id, actor="bob")
    assert retry.status is RunStatus.COMMITTED
    assert retry.retry_of == run_id
    assert env.store.get_run(run_id).status is RunStatus.FAILED_INTERNAL
    assert len(env.slack.effects()) == 1
    assert env.statuses() == {"m1": EventStatus.CONSUMED}
    actions = [a.action for a in env.store.audit_log(workflow="mail-to-sheet")]
    assert "resolve_mutation:didnt_happen" in actions


def test_skip_runs_next_with_skipped_and_skips_the_events(escalated: tuple[Env, str]) -> None:
    env, run_id = escalated
    done = env.actions.skip(run_id, actor="bob")
    assert done.status is RunStatus.COMMITTED
    assert env.statuses() == {"m1": EventStatus.SKIPPED}
    assert env.slack.effects() == []
    assert env.store.get_handler("mail-to-sheet", "appendRow").state["last"] == "skipped"  # type: ignore[index]


def test_actions_are_refused_on_runs_that_are_not_escalated(env: Env) -> None:
    env.publish("m1")
    committed = run(env)
    for action in (env.actions.skip, env.actions.didnt_happen, env.actions.try_again):
        with pytest.raises(ActionRefused, match="only a run paused for reconciliation"):
            action(committed.id, actor="bob")


def test_skipping_an_event_means_it_is_never_delivered(env: Env) -> None:
    env.publish("m1")
    event = env.store.list_events("mail-to-sheet")[0]
    env.actions.skip_event(event.id, actor="bob")
    run(env)
    assert env.sheets.effects() == []
    assert env.statuses() == {"m1": EventStatus.SKIPPED}


def test_a_logic_error_in_next_after_the_mutation_keeps_the_events_pinned(
    store_url: str,
) -> None:
    broken = MAIL_TO_SHEET.replace(
        "async next(ctx, prepared, mutationResult) {",
        "async next(ctx, prepared, mutationResult) {\n        throw new Error('oops');",
    )
    env = make_env(store_url, source=broken)
    env.publish("m1")
    failed = run(env)
    assert (failed.status, failed.phase) == (RunStatus.FAILED_LOGIC, RunPhase.EMITTING)
    assert env.statuses() == {"m1": EventStatus.RESERVED}
    env.runtime.deploy(MAIL_TO_SHEET)
    retry = env.runtime.retry(failed.id)
    assert (retry.status, retry.retry_of) == (RunStatus.COMMITTED, failed.id)
    assert len(env.sheets.effects()) == 1
    assert env.statuses() == {"m1": EventStatus.CONSUMED}
    assert env.statuses("row.created") == {"row:m1": EventStatus.PENDING}


def test_transient_backoff_grows_across_restarts_and_gives_up_at_the_limit(
    store_url: str,
) -> None:
    from keep_sdk.model import BackoffPolicy
    from keep_sdk.runtime import Runtime
    from tests.runtime.harness import fast_policy

    policy = fast_policy(backoff=BackoffPolicy(base_s=1.0, cap_s=60.0, jitter=0.0, max_attempts=3))
    env = make_env(store_url, policy=policy)
    env.publish("m1")
    env.sheets.faults.inject(FaultKind.TRANSIENT, operation="appendRow", times=None)
    paused = run(env)
    delays = []
    for _ in range(2):
        assert paused.resume_at is not None
        delays.append((paused.resume_at - env.clock()).total_seconds())
        restarted = Runtime(
            env.store,
            env.runtime.connectors,
            policy=policy,
            load_workflow=env.runtime.load_workflow,
            observe=env.runtime.observe,
            now=env.clock,
            isolation=InProcessIsolation(),
        )
        paused = restarted.resume(paused.id)
    assert delays == [1.0, 2.0]
    assert paused.status is RunStatus.PAUSED_TRANSIENT
    assert (paused.resume_at - env.clock()).total_seconds() == 4.0  # type: ignore[operator]
    final = env.runtime.resume(paused.id)
    assert final.status is RunStatus.FAILED_INTERNAL
    assert "gave up after 3 transient failures" in (final.error or "")
    assert sum("host: transient failure" in line for line in final.logs) == 3
    assert env.store.list_ledger()[0].status is LedgerStatus.FAILED
    assert env.statuses() == {"m1": EventStatus.PENDING}


def test_a_persons_resolution_is_heard_by_observers(escalated: tuple[Env, str]) -> None:
    from keep_sdk.plugins import LedgerChanged

    env, run_id = escalated
    env.observed.clear()
    env.actions.didnt_happen(run_id, actor="bob")
    statuses = [o.entry.status for o in env.observed if isinstance(o, LedgerChanged)]
    assert statuses == [LedgerStatus.FAILED, LedgerStatus.IN_FLIGHT, LedgerStatus.APPLIED]


def test_a_read_without_its_grant_escalates_naming_the_permission_once(store_url: str) -> None:
    env = make_env(store_url, grants=())
    paused = env.runtime.run_producer("mail-to-sheet", "pollEmail")
    assert paused.status is RunStatus.PAUSED_APPROVAL
    assert (paused.error or "").count("ctx.gmail.search") == 1
    [escalation] = [o.escalation for o in env.observed if isinstance(o, Escalated)]
    assert escalation.actions == ["grant gmail.read"]
