"""Version pinning, observers, and recovery of interrupted runs."""

from __future__ import annotations

from keep_sdk.connectors.builtin import FaultKind
from keep_sdk.model import EventStatus, HandlerKind, LedgerStatus, RunPhase, RunStatus
from keep_sdk.plugins import LedgerChanged, RunChanged
from tests.runtime.harness import MAIL_TO_SHEET, Env

V2 = MAIL_TO_SHEET.replace(
    "values: [prepared.data.from, prepared.data.subject]",
    'values: ["v2", prepared.data.from]',
)


def test_a_run_finishes_on_the_version_it_started_with(env: Env) -> None:
    env.publish("m1")
    env.sheets.faults.inject(FaultKind.TRANSIENT, operation="appendRow")
    paused = env.runtime.run_consumer("mail-to-sheet", "appendRow")
    assert paused.workflow_version == 1
    assert env.runtime.deploy(V2) == 2
    env.runtime.resume(paused.id)
    env.publish("m2")
    fresh = env.runtime.run_consumer("mail-to-sheet", "appendRow")
    assert fresh.workflow_version == 2
    assert env.rows() == [["m1@example.com", "Hi"], ["v2", "m2@example.com"]]


def test_state_and_events_survive_a_new_version(env: Env) -> None:
    env.publish("m1")
    env.runtime.run_consumer("mail-to-sheet", "appendRow")
    env.runtime.deploy(V2)
    assert env.store.get_handler("mail-to-sheet", "appendRow").state["count"] == 1  # type: ignore[index]
    assert env.statuses() == {"m1": EventStatus.CONSUMED}


def test_observers_hear_every_run_and_ledger_change_in_order(env: Env) -> None:
    env.publish("m1")
    run = env.runtime.run_consumer("mail-to-sheet", "appendRow")
    changes = [
        (o.run.phase.value, o.run.status.value)
        for o in env.observed
        if isinstance(o, RunChanged) and o.run.id == run.id
    ]
    assert changes == [
        ("mutating", "active"),
        ("committed", "committed"),
    ], "one change per checkpoint: begin + prepare + intent, then applied + commit"
    ledger = [o.entry.status for o in env.observed if isinstance(o, LedgerChanged)]
    assert ledger == [LedgerStatus.IN_FLIGHT, LedgerStatus.APPLIED]


def _interrupted(env: Env, phase: RunPhase) -> str:
    """Leave a run active at `phase`, as a crash of the host would."""
    store = env.store
    run = store.begin_run("mail-to-sheet", "appendRow", HandlerKind.CONSUMER)
    if phase is RunPhase.PREPARING:
        return run.id
    from keep_sdk.model import PrepareResult, Reservation

    store.save_prepare_result(
        run.id,
        PrepareResult(
            reservations=[Reservation(topic="email.received", ids=["m1"])],
            data={"id": "m1", "from": "m1@example.com", "subject": "Hi", "count": 0},
        ),
    )
    if phase is RunPhase.PREPARED:
        return run.id
    store.advance_phase(run.id, RunPhase.MUTATING)
    entry = store.record_mutation_intent(
        run.id,
        connector="sheets",
        operation="appendRow",
        params={"spreadsheetId": "reports", "values": ["m1@example.com", "Hi"]},
        idempotency_key="keep-test",
    )
    if phase is RunPhase.MUTATING:
        return run.id
    store.record_mutation_applied(entry.id, {"rowId": "row-9", "rowNumber": 9})
    return run.id


def test_recovery_releases_the_events_of_a_run_that_crashed_before_its_mutation(
    env: Env,
) -> None:
    env.publish("m1")
    run_id = _interrupted(env, RunPhase.PREPARED)
    [crashed] = env.runtime.recover()
    assert (crashed.id, crashed.status) == (run_id, RunStatus.CRASHED)
    assert env.statuses() == {"m1": EventStatus.PENDING}
    assert env.runtime.run_consumer("mail-to-sheet", "appendRow").status is RunStatus.COMMITTED
    assert len(env.sheets.effects()) == 1


def test_recovery_reconciles_a_mutation_that_was_in_flight(env: Env) -> None:
    env.publish("m1")
    run_id = _interrupted(env, RunPhase.MUTATING)
    [paused] = env.runtime.recover()
    assert (paused.id, paused.status) == (run_id, RunStatus.PAUSED_RECONCILIATION)
    [entry] = env.store.due_reconciliations(env.clock())
    env.runtime.reconcile(entry.id)
    assert env.store.get_run(run_id).status is RunStatus.COMMITTED
    assert len(env.sheets.effects()) == 1
    assert env.sheets.effects()[0]["idempotencyKey"] == "keep-test"


def test_recovery_continues_an_applied_mutation_from_emitting(env: Env) -> None:
    env.publish("m1")
    run_id = _interrupted(env, RunPhase.MUTATED)
    [retry] = env.runtime.recover()
    assert (retry.retry_of, retry.status) == (run_id, RunStatus.COMMITTED)
    assert env.store.get_run(run_id).status is RunStatus.CRASHED
    assert env.sheets.effects() == []
    assert env.statuses() == {"m1": EventStatus.CONSUMED}
    assert env.statuses("row.created") == {"row:m1": EventStatus.PENDING}
