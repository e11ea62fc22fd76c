"""A mutation whose outcome is uncertain is never performed twice, and never retried forever.

Each test plants the fault from outside, in the connector, the way a real service
misbehaves: a call slower than the host's patience, a plain exception raised after
the effect, an outcome that stays uncertain while the service keeps saying "not
applied", a crash between finding the outcome indeterminate and pausing the run.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any

import pytest

from keep_sdk.connectors.builtin import FaultKind
from keep_sdk.model import LedgerStatus, RunStatus
from tests.runtime.harness import Env, fast_policy, make_env


def _appends(env: Env) -> int:
    return len(env.sheets.effects("appendRow"))


def _wait(done: Callable[[], bool], *, seconds: float = 20.0) -> None:
    deadline = time.monotonic() + seconds
    while not done():
        assert time.monotonic() < deadline, "the abandoned call never ended"
        time.sleep(0.02)


def _entry(env: Env, run_id: str) -> Any:
    entry = env.store.ledger_entry_for_run(run_id)
    assert entry is not None
    return entry


def test_a_call_slower_than_the_timeout_is_made_once_and_its_result_kept(store_url: str) -> None:
    env = make_env(store_url, policy=fast_policy(mutation_timeout_s=0.2))
    env.publish("m1")
    env.sheets.faults.inject(FaultKind.SLOW, operation="appendRow", delay_s=1.0)
    paused = env.runtime.run_consumer("mail-to-sheet", "appendRow")
    assert paused.status is RunStatus.PAUSED_RECONCILIATION
    entry = _entry(env, paused.id)
    assert entry.status is LedgerStatus.NEEDS_RECONCILE
    assert "still running" in (paused.error or "")

    env.clock.advance(3600)
    env.runtime.reconcile(entry.id)
    assert _appends(env) <= 1, "re-issued while the first call was still running"

    _wait(lambda: not env.runtime.mutations.calls.running(entry.idempotency_key))
    env.clock.advance(3600)
    settled = env.runtime.reconcile(entry.id)
    assert settled.status is LedgerStatus.APPLIED
    assert settled.result == {"rowId": "row-1", "rowNumber": 1}
    assert _appends(env) == 1
    assert env.store.get_run(paused.id).status is RunStatus.COMMITTED


def test_a_plain_exception_after_the_effect_is_reconciled_not_charged_again(
    store_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    env = make_env(store_url)
    env.publish("m1")
    real = env.sheets._mutate
    raised = threading.Event()

    def effect_then_raise(*args: Any, **kwargs: Any) -> Any:
        result = real(*args, **kwargs)
        if not raised.is_set():
            raised.set()
            raise ConnectionResetError("connection reset by peer")
        return result

    monkeypatch.setattr(env.sheets, "_mutate", effect_then_raise)
    done = env.runtime.run_consumer("mail-to-sheet", "appendRow")
    assert raised.is_set()
    assert done.status is RunStatus.COMMITTED
    assert _entry(env, done.id).status is LedgerStatus.APPLIED
    assert _appends(env) == 1


@pytest.mark.parametrize("exception", [RuntimeError("boom"), KeyError("rows"), OSError(5, "EIO")])
def test_any_unclassified_error_is_an_uncertain_outcome(
    store_url: str, monkeypatch: pytest.MonkeyPatch, exception: Exception
) -> None:
    env = make_env(store_url)
    env.publish("m1")

    def fail_before_effect(*args: Any, **kwargs: Any) -> Any:
        raise exception

    monkeypatch.setattr(env.sheets, "_mutate", fail_before_effect)
    paused = env.runtime.run_consumer("mail-to-sheet", "appendRow")
    entry = _entry(env, paused.id)
    assert entry.status is not LedgerStatus.FAILED
    assert paused.status is RunStatus.PAUSED_RECONCILIATION
    assert type(exception).__name__ in (paused.error or "")


def test_a_definite_refusal_still_fails_the_entry(store_url: str) -> None:
    env = make_env(store_url)
    env.publish("m1")
    env.sheets.faults.inject(FaultKind.FAILURE, operation="appendRow")
    failed = env.runtime.run_consumer("mail-to-sheet", "appendRow")
    assert failed.status is RunStatus.FAILED_LOGIC
    assert _entry(env, failed.id).status is LedgerStatus.FAILED


@pytest.mark.parametrize("attempts", [1, 2, 3, 5])
def test_re_issues_are_bounded_spaced_and_then_a_person_decides(
    store_url: str, attempts: int
) -> None:
    env = make_env(store_url, policy=fast_policy(reconcile_attempts=attempts))
    env.publish("m1")
    env.sheets.faults.inject(FaultKind.TIMEOUT_BEFORE_EFFECT, operation="appendRow", times=None)
    calls = {"n": 0}
    real = env.sheets._before_effect

    def counting(operation: str, fault: Any, *, is_mutation: bool) -> None:
        if operation == "appendRow":
            calls["n"] += 1
        real(operation, fault, is_mutation=is_mutation)

    env.sheets._before_effect = counting  # type: ignore[method-assign]
    run = env.runtime.run_consumer("mail-to-sheet", "appendRow")
    due: list[Any] = []
    for _ in range(3 * attempts + 5):
        entry = _entry(env, run.id)
        if entry.status is not LedgerStatus.NEEDS_RECONCILE:
            break
        assert entry.next_reconcile_at is not None
        due.append(entry.next_reconcile_at)
        env.clock.set(entry.next_reconcile_at)
        env.runtime.reconcile(entry.id)
    entry = _entry(env, run.id)
    assert entry.status is LedgerStatus.INDETERMINATE
    assert env.store.get_run(run.id).status is RunStatus.PAUSED_RECONCILIATION
    assert 1 <= calls["n"] <= attempts + 1
    assert due == sorted(due)
    assert _appends(env) == 0


def test_a_crash_after_indeterminate_and_before_the_pause_is_recovered_to_a_person(
    store_url: str,
) -> None:
    env = make_env(store_url, policy=fast_policy(reconcile_attempts=1))
    env.publish("m1")
    env.sheets.faults.inject(FaultKind.TIMEOUT_AFTER_EFFECT, operation="appendRow")
    env.sheets.faults.inject(FaultKind.TRANSIENT, operation="reconcile:appendRow", times=None)
    pause = env.runtime.mutations.pause

    def crash(*args: Any, **kwargs: Any) -> Any:
        raise SystemExit("killed between marking indeterminate and pausing")

    env.runtime.mutations.pause = crash  # type: ignore[method-assign]
    with pytest.raises(SystemExit):
        env.runtime.run_consumer("mail-to-sheet", "appendRow")
    env.runtime.mutations.pause = pause  # type: ignore[method-assign]
    [active] = env.store.active_runs()
    assert _entry(env, active.id).status is LedgerStatus.INDETERMINATE

    [recovered] = env.runtime.recover()
    assert recovered.status is RunStatus.PAUSED_RECONCILIATION
    assert env.store.active_runs() == []
    assert any(
        "indeterminate" in str(o).lower() or "Escalat" in type(o).__name__ for o in env.observed
    )
    done = env.actions.skip(active.id, actor="alice")
    assert done.status is RunStatus.COMMITTED
    assert _appends(env) == 1


def test_the_connectors_uncertain_reason_reaches_the_person(store_url: str) -> None:
    """Issue 31: after rounds of "could not tell", the escalation still says why the outcome
    became uncertain ("timed out after the request was sent")."""
    env = make_env(store_url, policy=fast_policy(reconcile_attempts=3))
    env.publish("m1")
    env.sheets.faults.inject(FaultKind.TIMEOUT_AFTER_EFFECT, operation="appendRow")
    env.sheets.faults.inject(FaultKind.TRANSIENT, operation="reconcile:appendRow", times=None)
    run = env.runtime.run_consumer("mail-to-sheet", "appendRow")
    for _ in range(5):
        entry = _entry(env, run.id)
        if entry.status is not LedgerStatus.NEEDS_RECONCILE:
            break
        assert entry.next_reconcile_at is not None
        env.clock.set(entry.next_reconcile_at)
        env.runtime.reconcile(entry.id)
    entry = _entry(env, run.id)
    assert entry.status is LedgerStatus.INDETERMINATE
    escalations = [o for o in env.observed if type(o).__name__ == "Escalated"]
    assert escalations
    reason = escalations[-1].escalation.reason  # type: ignore[attr-defined]
    assert "timed out after the request was sent" in reason
    assert "no detail" not in reason
    assert "timed out after the request was sent" in (entry.error or "")
