"""`PersonActions.retry`: a person runs a failed or crashed run again."""

from __future__ import annotations

import pytest

from keep_sdk.connectors.builtin import FaultKind
from keep_sdk.errors import ActionRefused
from keep_sdk.model import EventStatus, RunPhase, RunStatus
from tests.runtime.harness import MAIL_TO_SHEET, Env, make_env


def run(env: Env):  # type: ignore[no-untyped-def]
    return env.runtime.run_consumer("mail-to-sheet", "appendRow")


def audit(env: Env) -> list[tuple[str, str, str]]:
    return [(a.actor, a.action, a.target) for a in env.store.audit_log(workflow="mail-to-sheet")]


def test_retry_of_a_run_that_failed_before_its_mutation_prepares_afresh(env: Env) -> None:
    env.publish("m1")
    env.sheets.faults.inject(FaultKind.FAILURE, operation="appendRow", times=1)
    failed = run(env)
    assert failed.status is RunStatus.FAILED_LOGIC
    retried = env.actions.retry(failed.id, actor="alice")
    assert retried.status is RunStatus.COMMITTED
    assert retried.retry_of is None
    assert env.statuses() == {"m1": EventStatus.CONSUMED}
    assert ("alice", "retry", failed.id) in audit(env)


def test_retry_after_an_applied_mutation_continues_from_emitting(store_url: str) -> None:
    broken = MAIL_TO_SHEET.replace(
        "async next(ctx, prepared, mutationResult) {",
        "async next(ctx, prepared, mutationResult) {\n        throw new Error('oops');",
    )
    env = make_env(store_url, source=broken)
    env.publish("m1")
    failed = run(env)
    assert (failed.status, failed.phase) == (RunStatus.FAILED_LOGIC, RunPhase.EMITTING)
    env.runtime.deploy(MAIL_TO_SHEET)
    retried = env.actions.retry(failed.id, actor="alice")
    assert (retried.status, retried.retry_of) == (RunStatus.COMMITTED, failed.id)
    assert len(env.sheets.effects()) == 1
    assert env.statuses() == {"m1": EventStatus.CONSUMED}
    assert audit(env)[-1] == ("alice", "retry", failed.id)


def test_retry_is_refused_for_a_run_that_did_not_fail_and_nothing_is_audited(env: Env) -> None:
    env.publish("m1")
    committed = run(env)
    before = audit(env)
    with pytest.raises(ActionRefused, match="only a failed or crashed run is retried"):
        env.actions.retry(committed.id, actor="alice")
    assert audit(env) == before
    assert len(env.store.list_runs(workflow="mail-to-sheet")) == 1
