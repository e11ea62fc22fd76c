"""Every run keeps its calls per phase: operation, arguments, result or classified error,
duration; cut by the trace budget; secrets redacted; stored with the run in every store."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import assume, given, settings
from hypothesis import strategies as st

from keep_sdk.connectors.builtin.faults import FaultKind
from keep_sdk.model import FailureKind, HandlerPhase, RunRecord, RunStatus, SandboxLimits
from keep_sdk.runtime.redaction import (
    _PATTERNS,
    REDACTED,
    redact,
    redact_value,
    register_redactor,
    unregister_redactor,
)
from tests.runtime.harness import MAIL_TO_SHEET, Env, fast_policy, make_env


def _phases(run: RunRecord) -> list[tuple[HandlerPhase, list[tuple[str, str]]]]:
    return [(p.phase, [(c.operation, c.status) for c in p.calls]) for p in run.trace]


def test_a_consumer_run_keeps_each_phase_with_its_calls_and_the_mutation_result(env: Env) -> None:
    env.publish("m1")
    run = env.runtime.run_consumer("mail-to-sheet", "appendRow")
    stored = env.store.get_run(run.id)
    assert _phases(stored) == [
        (HandlerPhase.PREPARE, [("peek", "ok")]),
        (HandlerPhase.MUTATE, [("sheets.appendRow", "requested")]),
        (HandlerPhase.NEXT, [("publish", "ok")]),
    ]
    peek = stored.trace[0].calls[0]
    assert peek.arguments == {"topic": "email.received", "limit": 1}
    assert isinstance(peek.result, list)
    assert peek.result[0]["messageId"] == "m1"
    mutation = stored.trace[1].calls[0]
    assert mutation.arguments == {"spreadsheetId": "reports", "values": ["m1@example.com", "Hi"]}
    assert mutation.result == {"rowId": "row-1", "rowNumber": 1}
    assert mutation.line is not None
    assert mutation.duration_s > 0
    publish = stored.trace[2].calls[0]
    assert publish.result == {"messageId": "row:m1"}


def test_a_producer_run_keeps_its_reads_and_publishes(env: Env) -> None:
    run = env.runtime.run_producer("mail-to-sheet", "pollEmail")
    stored = env.store.get_run(run.id)
    [phase] = stored.trace
    assert phase.phase is HandlerPhase.PRODUCER
    assert [c.operation for c in phase.calls] == ["gmail.search"] + ["publish"] * 3
    assert [m["id"] for m in phase.calls[0].result] == ["m1", "m2", "m3"]  # type: ignore[union-attr]


def test_a_transient_read_failure_is_kept_classified_and_the_resumed_attempt_appended(
    env: Env,
) -> None:
    env.gmail.faults.inject(FaultKind.TRANSIENT, operation="search")
    run = env.runtime.run_producer("mail-to-sheet", "pollEmail")
    assert run.status is RunStatus.PAUSED_TRANSIENT
    [failed] = env.store.get_run(run.id).trace
    assert failed.calls[0].status == "failed"
    assert failed.calls[0].failure is FailureKind.TRANSIENT
    assert failed.calls[0].error
    env.clock.advance(120)
    resumed = env.runtime.resume(run.id)
    assert resumed.status is RunStatus.COMMITTED
    first, second = env.store.get_run(run.id).trace
    assert first.calls[0].status == "failed"
    assert second.calls[0].status == "ok"


def test_a_refused_mutation_keeps_the_arguments_and_the_permission_error(store_url: str) -> None:
    env = make_env(store_url, grants=("gmail.read",))
    env.publish("m1")
    run = env.runtime.run_consumer("mail-to-sheet", "appendRow")
    assert run.status is RunStatus.PAUSED_APPROVAL
    mutation = env.store.get_run(run.id).trace[-1].calls[-1]
    assert mutation.operation == "sheets.appendRow"
    assert mutation.failure is FailureKind.PERMISSION
    assert mutation.error is not None
    assert "sheets.write" in mutation.error
    assert mutation.result is None


def test_a_failed_mutation_keeps_the_connector_error(env: Env) -> None:
    env.sheets.faults.inject(FaultKind.FAILURE, operation="appendRow")
    env.publish("m1")
    run = env.runtime.run_consumer("mail-to-sheet", "appendRow")
    mutation = env.store.get_run(run.id).trace[-1].calls[-1]
    assert mutation.status == "requested"
    assert mutation.failure is FailureKind.PRECONDITION


def test_the_trace_budget_leaves_arguments_and_results_out(store_url: str) -> None:
    policy = fast_policy(sandbox=SandboxLimits(cpu_time_s=2.0, wall_time_s=5.0, max_trace_bytes=0))
    env = make_env(store_url, policy=policy)
    run = env.runtime.run_producer("mail-to-sheet", "pollEmail")
    [phase] = env.store.get_run(run.id).trace
    assert phase.truncated
    assert next(c.operation for c in phase.calls) == "gmail.search"
    assert all(c.arguments is None and c.result is None for c in phase.calls)


SECRET_SCRIPT = MAIL_TO_SHEET.replace(
    "values: [prepared.data.from, prepared.data.subject],",
    'values: [prepared.data.from, "password=hunter2hunter2", "Bearer abcdefghijklmnopqrstuvwxyz"],',
)


def test_secrets_in_arguments_are_redacted_before_they_are_stored(store_url: str) -> None:
    env = make_env(store_url, source=SECRET_SCRIPT)
    env.publish("m1")
    run = env.runtime.run_consumer("mail-to-sheet", "appendRow")
    stored = json.dumps(env.store.get_run(run.id).model_dump(mode="json"))
    assert "hunter2" not in stored
    assert "abcdefghijklmnopqrstuvwxyz" not in stored
    assert REDACTED in stored
    assert env.rows() == [["m1@example.com", "password=hunter2hunter2",
                           "Bearer abcdefghijklmnopqrstuvwxyz"]]  # fmt: skip


def test_a_registered_redactor_applies_to_later_traces(store_url: str) -> None:
    def hide_address(text: str) -> str:
        return text.replace("m1@example.com", "<address>")

    register_redactor(hide_address)
    try:
        env = make_env(store_url)
        env.publish("m1")
        run = env.runtime.run_consumer("mail-to-sheet", "appendRow")
    finally:
        unregister_redactor(hide_address)
    trace = json.dumps([p.model_dump(mode="json") for p in env.store.get_run(run.id).trace])
    assert "m1@example.com" not in trace
    assert "<address>" in trace
    assert env.rows() == [["m1@example.com", "Hi"]]


_secret = st.text(alphabet="abcdefghijklmnopqrstuvwxyzABCDEF0123456789", min_size=20, max_size=40)


@settings(max_examples=60, deadline=None)
@given(secret=_secret, before=st.text(max_size=20), after=st.text(max_size=20))
def test_redact_never_keeps_a_bearer_token_or_password_pair(
    secret: str, before: str, after: str
) -> None:
    assume(secret not in before and secret not in after)
    for text in (f"{before} Bearer {secret} {after}", f"{before} password={secret} {after}"):
        assert secret not in redact(text)


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=10),
    lambda inner: (
        st.lists(inner, max_size=3)
        | st.dictionaries(st.sampled_from(["a", "b", "pageToken", "cursor"]), inner, max_size=3)
    ),
    max_leaves=10,
)


@settings(max_examples=60, deadline=None)
@given(value=json_values, secret=_secret)
def test_redact_value_blanks_secret_keys_and_keeps_everything_else(value: Any, secret: str) -> None:
    assert redact_value(value) == value
    wrapped = {"data": value, "apiKey": secret, "nested": [{"client_secret": secret}]}
    redacted = redact_value(wrapped)
    assert secret not in json.dumps(redacted)
    assert redacted["data"] == value  # type: ignore[index]


_SHAPES = [
    "Bearer ",
    "basic ",
    "PASSWORD=",
    "passwd: ",
    "secret = ",
    "Token:",
    "api-key=",
    "client_secret=",
    "sk-",
    "PK-",
    "ghp_",
    "xoxb-",
    "AKIA",
    "eyJ",
    ".",
    "'",
    '"',
    " ",
]
"""The pieces of every built-in pattern (in any case), so generated texts hit and nearly
hit each of them."""


@settings(max_examples=300, deadline=None)
@given(
    st.lists(
        st.sampled_from(_SHAPES)
        | st.text(alphabet="abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-")
        | st.text(max_size=6),
        max_size=12,
    )
)
def test_redact_changes_exactly_what_each_pattern_in_turn_would(pieces: list[str]) -> None:
    """`redact` skips the patterns when one search finds none of them could match; what it
    returns is still what applying every pattern in order returns, for any text."""
    text = "".join(pieces)
    expected = text
    for pattern, replacement in _PATTERNS:
        expected = pattern.sub(replacement, expected)
    assert redact(text) == expected
