"""Every built-in double returns what its manifest declares: the declared result schema
holds for the real results over generated seed data (and events for what peek returns)."""

from __future__ import annotations

import datetime as dt
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st
from jsonschema import Draft202012Validator

from keep_sdk.connectors.builtin import Gmail, Jobs, Sheets, Slack
from keep_sdk.contract.durable import Done, InvocationContext
from keep_sdk.contract.results import EVENT_SCHEMA, TOPIC_RESULTS
from keep_sdk.model import Event
from keep_sdk.plugins import default_plugins
from keep_sdk.runtime._host import script_event

_TEXT = st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=12)
_CELL = st.one_of(st.none(), st.booleans(), st.integers(-1000, 1000), _TEXT)
_EXTRA = st.dictionaries(st.sampled_from(["labels", "threadId", "cc", "snippet"]), _TEXT)


def _holds(schema: dict[str, Any] | None, value: Any) -> None:
    assert schema is not None
    errors = [e.message for e in Draft202012Validator(schema).iter_errors(value)]
    assert errors == [], (value, errors)


_DECLARED = {
    (connector.name, op.name): op.result
    for connector in default_plugins().manifest().connectors
    for op in connector.operations
}


def _result(connector: type, operation: str) -> dict[str, Any] | None:
    return _DECLARED[(connector.name, operation)]  # type: ignore[attr-defined]


def test_every_builtin_operation_declares_its_result() -> None:
    manifest = default_plugins().manifest()
    builtin = {"approvals", "gmail", "jobs", "sheets", "slack"}
    undeclared = [
        f"{c.name}.{op.name}"
        for c in manifest.connectors
        if c.name in builtin
        for op in c.operations
        if op.result is None
    ]
    assert undeclared == []


@st.composite
def _messages(draw: st.DrawFn) -> list[dict[str, Any]]:
    count = draw(st.integers(0, 5))
    return [
        {
            "id": f"m{i}",
            "from": draw(_TEXT),
            "subject": draw(_TEXT),
            "body": draw(_TEXT),
            "receivedAt": f"2026-01-0{i + 1}T00:00:00Z",
            **({"to": draw(_TEXT)} if draw(st.booleans()) else {}),
            **draw(_EXTRA),
        }
        for i in range(count)
    ]


@settings(max_examples=40, deadline=None)
@given(messages=_messages(), query=st.one_of(st.none(), _TEXT), known=st.booleans())
def test_gmail_results_are_what_the_manifest_declares(
    messages: list[dict[str, Any]], query: str | None, known: bool
) -> None:
    gmail = Gmail(seed={"messages": messages})
    _holds(_result(Gmail, "search"), gmail.invoke("search", {"query": query}))
    wanted = messages[0]["id"] if known and messages else "absent"
    _holds(_result(Gmail, "getById"), gmail.invoke("getById", {"id": wanted}))
    sent = gmail.invoke("send", {"to": "a@b.co", "subject": "s", "body": "b"}, idempotency_key="k1")
    _holds(_result(Gmail, "send"), sent)


@settings(max_examples=40, deadline=None)
@given(
    rows=st.lists(st.lists(_CELL, min_size=0, max_size=4), max_size=5),
    values=st.lists(_CELL, min_size=1, max_size=4),
    pick=st.integers(0, 5),
)
def test_sheets_results_are_what_the_manifest_declares(
    rows: list[list[Any]], values: list[Any], pick: int
) -> None:
    seeded = [{"rowId": f"row-{i + 1}", "values": v} for i, v in enumerate(rows)]
    sheets = Sheets(seed={"spreadsheets": {"s": {"rows": seeded}}})
    _holds(_result(Sheets, "listRows"), sheets.invoke("listRows", {"spreadsheetId": "s"}))
    got = sheets.invoke("getRow", {"spreadsheetId": "s", "rowId": f"row-{pick}"})
    _holds(_result(Sheets, "getRow"), got)
    appended = sheets.invoke(
        "appendRow", {"spreadsheetId": "s", "values": values}, idempotency_key="k1"
    )
    _holds(_result(Sheets, "appendRow"), appended)
    updated = sheets.invoke(
        "updateRow",
        {"spreadsheetId": "s", "rowId": appended["rowId"], "values": values},  # type: ignore[index, call-overload]
        idempotency_key="k2",
    )
    _holds(_result(Sheets, "updateRow"), updated)


def test_slack_post_message_returns_what_the_manifest_declares() -> None:
    slack = Slack(seed={"channels": {"#sales": []}})
    posted = slack.invoke("postMessage", {"channel": "#sales", "text": "hi"}, idempotency_key="k1")
    _holds(_result(Slack, "postMessage"), posted)


@settings(max_examples=20, deadline=None)
@given(job_input=st.recursive(_CELL, lambda inner: st.lists(inner, max_size=3), max_leaves=6))
def test_a_finished_job_completes_with_what_the_manifest_declares(job_input: Any) -> None:
    jobs = Jobs(seed={"pendingPolls": 0})
    invocation = InvocationContext(invocation_id="i1", correlation_key="c1", idempotency_key="k1")
    args = {"name": "build", "input": job_input}
    pending = jobs.start("submit", args, invocation)
    answer = jobs.poll("submit", args, invocation.model_copy(update={"token": pending.token}))
    assert isinstance(answer, Done)
    assert answer.ok
    _holds(_result(Jobs, "submit"), answer.result)


@settings(max_examples=40, deadline=None)
@given(title=_TEXT, payload=st.recursive(_CELL, lambda inner: st.lists(inner, max_size=3)))
def test_an_event_as_scripts_read_it_is_what_peek_declares(title: str, payload: Any) -> None:
    now = dt.datetime(2026, 1, 1, tzinfo=dt.UTC)
    event = Event(
        id="e1",
        workflow="w",
        topic="email.received",
        message_id="m-1",
        title=title,
        payload=payload,
        created_at=now,
        updated_at=now,
    )
    _holds(EVENT_SCHEMA, script_event(event))
    _holds(TOPIC_RESULTS["peek"], [script_event(event)])
