"""The host side of ctx refuses what the phase table forbids, whatever reaches it."""

from __future__ import annotations

import pytest

from keep_sdk.errors import InvalidArguments, PermissionDenied, PhaseViolation, UnknownConnector
from keep_sdk.model import HandlerPhase
from keep_sdk.runtime import PhaseHost
from tests.runtime.harness import Env, fast_policy


def host(env: Env, phase: HandlerPhase, **overrides: object) -> PhaseHost:
    values: dict[str, object] = {
        "store": env.store,
        "connectors": env.runtime.connectors,
        "policy": env.runtime.policy,
        "workflow": "mail-to-sheet",
        "handler": "appendRow",
        "phase": phase,
        "subscribed": ["email.received"],
        "publishable": ["row.created"],
        "grants": ["gmail.read", "sheets.write"],
        "message_id_seed": "seed",
    }
    values.update(overrides)
    return PhaseHost(**values)  # type: ignore[arg-type]


ROWS = {"spreadsheetId": "reports", "rowId": "row-1"}


@pytest.mark.parametrize(
    ("phase", "name", "arguments"),
    [
        (HandlerPhase.MUTATE, "gmail.search", {}),
        (HandlerPhase.MUTATE, "sheets.getRow", ROWS),
        (HandlerPhase.NEXT, "gmail.search", {}),
        (HandlerPhase.NEXT, "peek", {"topic": "email.received"}),
        (HandlerPhase.PRODUCER, "peek", {"topic": "email.received"}),
        (HandlerPhase.PRODUCER, "getByIds", {"topic": "email.received", "ids": []}),
        (HandlerPhase.PREPARE, "publish", {"topic": "row.created", "event": {"title": "x"}}),
        (HandlerPhase.MUTATE, "publish", {"topic": "row.created", "event": {"title": "x"}}),
        (HandlerPhase.PREPARE, "sheets.appendRow", {"spreadsheetId": "r", "values": [1]}),
        (HandlerPhase.PRODUCER, "slack.postMessage", {"channel": "#a", "text": "x"}),
    ],
)
def test_the_phase_table_is_enforced_in_the_host(
    env: Env, phase: HandlerPhase, name: str, arguments: object
) -> None:
    with pytest.raises(PhaseViolation):
        host(env, phase).call(name, arguments)  # type: ignore[arg-type]


def test_read_by_id_in_mutate_only_with_the_policy_flag(env: Env) -> None:
    env.sheets.seed({"spreadsheets": {"reports": {"rows": [{"rowId": "row-1", "values": [1]}]}}})
    allowed = host(
        env,
        HandlerPhase.MUTATE,
        policy=fast_policy(mutate_reads="by_id"),
        grants=["gmail.read", "sheets.read"],
    )
    assert allowed.call("sheets.getRow", ROWS) == {"rowId": "row-1", "values": [1]}
    with pytest.raises(PhaseViolation):
        allowed.call("gmail.search", {})


def test_topics_outside_the_declaration_are_refused(env: Env) -> None:
    with pytest.raises(PhaseViolation, match=r"may peek: email\.received"):
        host(env, HandlerPhase.PREPARE).call("peek", {"topic": "row.created"})
    with pytest.raises(PhaseViolation, match=r"may publish to: row\.created"):
        host(env, HandlerPhase.NEXT).call(
            "publish", {"topic": "email.received", "event": {"title": "x"}}
        )


def test_reads_need_their_permission(env: Env) -> None:
    with pytest.raises(PermissionDenied, match=r"keep grant mail-to-sheet gmail\.read"):
        host(env, HandlerPhase.PREPARE, grants=[]).call("gmail.search", {})


def test_unknown_connectors_are_named(env: Env) -> None:
    with pytest.raises(UnknownConnector, match="registered connectors: gmail, sheets, slack"):
        host(env, HandlerPhase.PREPARE).call("gmial.search", {})


def test_publishes_are_buffered_with_stable_host_ids(env: Env) -> None:
    first = host(env, HandlerPhase.NEXT)
    second = host(env, HandlerPhase.NEXT)
    for h in (first, second):
        h.call("publish", {"topic": "row.created", "event": {"title": "Row for alice"}})
    assert env.store.list_events("mail-to-sheet") == []
    assert first.publishes == second.publishes
    assert first.publishes[0].message_id.startswith("host-")


def test_an_invalid_event_is_explained(env: Env) -> None:
    with pytest.raises(InvalidArguments, match="`title` is required but missing"):
        host(env, HandlerPhase.NEXT).call("publish", {"topic": "row.created", "event": {}})


def test_peek_clamps_its_limit_and_hides_host_metadata(env: Env) -> None:
    for i in range(3):
        env.publish(f"m{i}")
    events = host(env, HandlerPhase.PREPARE).call("peek", {"topic": "email.received", "limit": 2})
    assert isinstance(events, list)
    assert [e["messageId"] for e in events] == ["m0", "m1"]  # type: ignore[index,call-overload]
    assert set(events[0]) == {"topic", "messageId", "title", "payload", "createdAt"}  # type: ignore[arg-type]
    with pytest.raises(InvalidArguments, match="positive integer"):
        host(env, HandlerPhase.PREPARE).call("peek", {"topic": "email.received", "limit": 0})
