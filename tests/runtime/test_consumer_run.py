"""One consumer run end to end: checkpoints, mutationResult, commit, PrepareResult checks."""

from __future__ import annotations

import datetime as dt

import pytest

from keep_sdk.model import EventStatus, LedgerStatus, RunPhase, RunStatus
from tests.runtime.harness import MAIL_TO_SHEET, Env, make_env


def test_a_run_appends_a_row_publishes_and_consumes_its_event(env: Env) -> None:
    env.publish("m1")
    run = env.runtime.run_consumer("mail-to-sheet", "appendRow")
    assert (run.status, run.phase) == (RunStatus.COMMITTED, RunPhase.COMMITTED)
    assert env.rows() == [["m1@example.com", "Hi"]]
    assert env.statuses() == {"m1": EventStatus.CONSUMED}
    assert env.statuses("row.created") == {"row:m1": EventStatus.PENDING}
    [entry] = env.store.list_ledger(workflow="mail-to-sheet")
    assert entry.status is LedgerStatus.APPLIED
    assert entry.ui_title == "Add row for m1@example.com"
    assert entry.result == {"rowId": "row-1", "rowNumber": 1}
    assert env.sheets.effects()[0]["idempotencyKey"] == entry.idempotency_key
    state = env.store.get_handler("mail-to-sheet", "appendRow")
    assert state.state == {"count": 1, "last": "applied"}


def test_empty_reservations_skip_mutate_and_next_sees_none(env: Env) -> None:
    run = env.runtime.run_consumer("mail-to-sheet", "appendRow")
    assert run.status is RunStatus.COMMITTED
    assert env.sheets.effects() == []
    assert env.store.list_ledger() == []
    assert env.store.get_handler("mail-to-sheet", "appendRow").state == {
        "count": 1,
        "last": "none",
    }


def test_mutate_that_calls_no_mutation_gives_none(store_url: str) -> None:
    source = MAIL_TO_SHEET.replace(
        "await ctx.sheets.appendRow({",
        "if (prepared.data.from === 'nobody') await ctx.sheets.appendRow({",
    )
    env = make_env(store_url, source=source)
    env.publish("m1")
    run = env.runtime.run_consumer("mail-to-sheet", "appendRow")
    assert run.status is RunStatus.COMMITTED
    assert env.statuses() == {"m1": EventStatus.CONSUMED}
    assert env.sheets.effects() == []
    assert env.store.get_handler("mail-to-sheet", "appendRow").state["last"] == "none"  # type: ignore[index]


def test_state_flows_from_next_to_the_next_prepare(env: Env) -> None:
    for message_id in ("m1", "m2"):
        env.publish(message_id)
    for _ in range(2):
        env.runtime.run_consumer("mail-to-sheet", "appendRow")
    assert env.store.get_handler("mail-to-sheet", "appendRow").state == {
        "count": 2,
        "last": "applied",
    }


@pytest.mark.parametrize(
    ("prepare_body", "message"),
    [
        ("return 42;", "returned an invalid result"),
        ("return;", "returned nothing"),
        (
            'const t = ["row", "created"].join(".");\n'
            "return { reservations: [{ topic: t, ids: ['x'] }], data: {} };",
            "does not subscribe to",
        ),
        (
            'return { reservations: [{ topic: "email.received", ids: ["nope"] }], data: {} };',
            "reserved events it cannot have",
        ),
        ('return { reservations: [], data: {}, wakeAt: "soon" };', "`wakeAt`"),
        ('return { reservations: [], data: {}, colour: "red" };', "`colour` is not a known field"),
    ],
)
def test_a_bad_prepare_result_is_a_readable_logic_error(
    store_url: str, prepare_body: str, message: str
) -> None:
    start = MAIL_TO_SHEET.index("async prepare(ctx, state) {") + len("async prepare(ctx, state) {")
    end = MAIL_TO_SHEET.index("async mutate(")
    source = MAIL_TO_SHEET[:start] + prepare_body + "},\n      " + MAIL_TO_SHEET[end:]
    env = make_env(store_url, source=source)
    env.publish("m1")
    run = env.runtime.run_consumer("mail-to-sheet", "appendRow")
    assert run.status is RunStatus.FAILED_LOGIC
    assert message in (run.error or "")
    assert run.phase is RunPhase.PREPARING
    assert env.statuses() == {"m1": EventStatus.PENDING}


def test_reserving_a_consumed_event_is_a_logic_error_and_changes_nothing(env: Env) -> None:
    env.publish("m1")
    env.runtime.run_consumer("mail-to-sheet", "appendRow")
    source = MAIL_TO_SHEET.replace(
        'const [e] = await ctx.peek("email.received", { limit: 1 });',
        'const [e] = await ctx.getByIds("email.received", ["m1"]);',
    )
    env.runtime.deploy(source)
    run = env.runtime.run_consumer("mail-to-sheet", "appendRow")
    assert run.status is RunStatus.FAILED_LOGIC
    assert "reserved events it cannot have" in (run.error or "")
    assert "not pending" in (run.error or "")
    assert env.rows() == [["m1@example.com", "Hi"]]


def test_wake_at_is_clamped_to_the_policy_range(env: Env) -> None:
    source = MAIL_TO_SHEET.replace(
        "if (!e) return { reservations: [], data: { count: state?.count ?? 0 } };",
        'if (!e) return { reservations: [], data: {}, wakeAt: "2030-01-01T00:00:00Z" };',
    )
    env.runtime.deploy(source)
    env.runtime.run_consumer("mail-to-sheet", "appendRow")
    handler = env.store.get_handler("mail-to-sheet", "appendRow")
    assert handler.wake_at == env.clock() + dt.timedelta(days=1)


def test_a_script_error_carries_its_line(env: Env) -> None:
    source = MAIL_TO_SHEET.replace(
        "async mutate(ctx, prepared) {", "async mutate(ctx, prepared) {\n        null.boom;"
    )
    env.runtime.deploy(source)
    env.publish("m1")
    run = env.runtime.run_consumer("mail-to-sheet", "appendRow")
    assert run.status is RunStatus.FAILED_LOGIC
    line = source[: source.index("null.boom")].count("\n") + 1
    assert f":{line}" in (run.error or ""), run.error
    assert env.statuses() == {"m1": EventStatus.PENDING}
    assert env.store.get_event(env.store.list_events("mail-to-sheet")[0].id).attempt == 1
