"""A run that reached ``emitting`` with its mutation unsettled (issue 31 part 5): it ends
``failed:internal`` holding its event; retrying it finds out whether the mutation happened
and carries on from there, so the event is consumed, never reserved forever."""

from __future__ import annotations

import pytest

from keep_sdk.connectors import idempotency_key
from keep_sdk.errors import ActionRefused
from keep_sdk.model import (
    EventStatus,
    HandlerKind,
    LedgerStatus,
    PrepareResult,
    Reservation,
    RunPhase,
    RunRecord,
    RunStatus,
)
from tests.runtime.harness import Env, make_env

WF = "mail-to-sheet"


def _orphan(env: Env, *, applied: bool) -> RunRecord:
    """A consumer run at ``emitting`` whose ledger entry is still ``in_flight``; with
    `applied` the service did make the change."""
    env.publish("m1", **{"from": "ann@example.com", "subject": "hello"})
    store = env.store
    run = store.begin_run(WF, "appendRow", HandlerKind.CONSUMER)
    store.save_prepare_result(
        run.id,
        PrepareResult(
            reservations=[Reservation(topic="email.received", ids=["m1"])],
            data={"id": "m1", "from": "ann@example.com", "subject": "hello", "count": 0},
        ),
    )
    store.advance_phase(run.id, RunPhase.MUTATING)
    key = idempotency_key(WF, "appendRow", run.id)
    params = {"spreadsheetId": "reports", "values": ["ann@example.com", "hello"]}
    store.record_mutation_intent(
        run.id, connector="sheets", operation="appendRow", params=params, idempotency_key=key
    )
    if applied:
        env.sheets.invoke("appendRow", params, idempotency_key=key)
    store.advance_phase(run.id, RunPhase.EMITTING)
    ended = env.runtime.drive(store.get_run(run.id))
    assert ended.status is RunStatus.FAILED_INTERNAL
    [event] = store.list_events(WF)
    assert event.status is EventStatus.RESERVED
    return ended


@pytest.mark.parametrize("applied", [True, False])
def test_retrying_an_orphaned_mutation_settles_it_and_consumes_the_event(
    store_url: str, applied: bool
) -> None:
    env = make_env(store_url)
    orphan = _orphan(env, applied=applied)
    done = env.actions.retry(orphan.id, actor="ann")
    assert done.status is RunStatus.COMMITTED
    assert done.retry_of == orphan.id
    assert len(env.sheets.effects("appendRow")) == 1
    assert [e.status for e in env.store.list_events(WF) if e.topic == "email.received"] == [
        EventStatus.CONSUMED
    ]
    entry = env.store.ledger_entry_for_run(orphan.id)
    assert entry is not None
    assert entry.status is (LedgerStatus.APPLIED if applied else LedgerStatus.FAILED)


def test_an_orphan_nobody_can_settle_is_refused_with_why(store_url: str) -> None:
    env = make_env(store_url)
    orphan = _orphan(env, applied=False)
    env.sheets.faults.inject("transient", operation="reconcile:appendRow", times=None)
    with pytest.raises(ActionRefused, match="nobody can tell whether it happened"):
        env.actions.retry(orphan.id, actor="ann")
    entry = env.store.ledger_entry_for_run(orphan.id)
    assert entry is not None
    assert entry.status is LedgerStatus.INDETERMINATE
    assert env.sheets.effects("appendRow") == []
