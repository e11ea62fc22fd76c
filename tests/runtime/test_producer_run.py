"""Producer runs: state and publishes commit together, or not at all."""

from __future__ import annotations

import datetime as dt

from keep_sdk.connectors.builtin import FaultKind
from keep_sdk.model import EventStatus, RunStatus
from tests.runtime.harness import MAIL_TO_SHEET, Env, deploy_unvalidated, make_env


def test_a_producer_publishes_and_advances_its_cursor(env: Env) -> None:
    run = env.runtime.run_producer("mail-to-sheet", "pollEmail")
    assert run.status is RunStatus.COMMITTED
    events = env.store.list_events("mail-to-sheet", topic="email.received")
    assert [e.message_id for e in events] == ["m1", "m2", "m3"]
    assert events[0].title == 'Email from sender1@example.com: "Invoice 1"'
    assert all(e.created_by == run.id for e in events)
    handler = env.store.get_handler("mail-to-sheet", "pollEmail")
    assert handler.state == {"cursor": "2026-11-20T03:00:00Z"}
    assert handler.next_run_at == env.clock() + dt.timedelta(minutes=5)


def test_rerunning_a_producer_publishes_nothing_twice(env: Env) -> None:
    env.runtime.run_producer("mail-to-sheet", "pollEmail")
    env.runtime.run_consumer("mail-to-sheet", "appendRow")
    env.store.get_handler("mail-to-sheet", "pollEmail")
    source = MAIL_TO_SHEET.replace("after: state?.cursor", "after: undefined")
    env.runtime.deploy(source)
    env.runtime.run_producer("mail-to-sheet", "pollEmail")
    statuses = env.statuses()
    assert statuses == {
        "m1": EventStatus.CONSUMED,
        "m2": EventStatus.PENDING,
        "m3": EventStatus.PENDING,
    }
    assert len(env.store.list_events("mail-to-sheet", topic="email.received")) == 3


def test_a_failed_producer_publishes_nothing_and_keeps_its_state(store_url: str) -> None:
    source = MAIL_TO_SHEET.replace(
        "return { cursor:",
        "if (emails.length > 2) throw new Error('bad batch');\n        return { cursor:",
    )
    env = make_env(store_url, source=source)
    run = env.runtime.run_producer("mail-to-sheet", "pollEmail")
    assert run.status is RunStatus.FAILED_LOGIC
    assert "bad batch" in (run.error or "")
    assert env.store.list_events("mail-to-sheet") == []
    assert not env.store.get_handler("mail-to-sheet", "pollEmail").has_state


def test_a_transient_read_failure_pauses_the_producer_with_backoff(env: Env) -> None:
    env.gmail.faults.inject(FaultKind.TRANSIENT, operation="search")
    run = env.runtime.run_producer("mail-to-sheet", "pollEmail")
    assert run.status is RunStatus.PAUSED_TRANSIENT
    assert run.resume_at == env.clock() + dt.timedelta(seconds=1)
    assert env.runtime.resume(run.id).status is RunStatus.COMMITTED
    assert len(env.store.list_events("mail-to-sheet")) == 3


def test_a_producer_cannot_mutate_even_through_dynamic_access(env: Env) -> None:
    source = MAIL_TO_SHEET.replace(
        "const emails = await ctx.gmail.search({ after: state?.cursor });",
        "const emails = await ctx.gmail.search({ after: state?.cursor });\n"
        "        await ctx['she' + 'ets'].appendRow({ spreadsheetId: 'reports', values: [1] });",
    )
    deploy_unvalidated(env, source)
    run = env.runtime.run_producer("mail-to-sheet", "pollEmail")
    assert run.status is RunStatus.FAILED_LOGIC
    assert env.sheets.effects() == []
    assert env.store.list_events("mail-to-sheet") == []
