"""The sandbox against the manifest of the built-in connectors."""

from __future__ import annotations

import pytest

from keep_sdk.connectors import builtin_manifest
from keep_sdk.sandbox import Completed, LogicFailure, MutationRequested, run_phase
from tests.sandbox.helpers import RecordingHost, in_phase, request


def _run(phase: str, body: str) -> object:
    req = request(in_phase(phase, body), phase).model_copy(update={"manifest": builtin_manifest()})
    return run_phase(req, RecordingHost()).outcome


def test_ctx_lists_the_builtin_operations_of_each_phase() -> None:
    body = "return Object.keys(ctx).sort().map((k) => [k, Object.keys(ctx[k] || {}).sort()]);"
    assert _run("prepare", body) == Completed(
        result=[
            ["getByIds", []],
            ["gmail", ["getById", "search"]],
            ["peek", []],
            ["sheets", ["getRow", "listRows"]],
        ]
    )
    assert _run("mutate", body) == Completed(
        result=[
            ["approvals", ["request"]],
            ["gmail", ["send"]],
            ["jobs", ["submit"]],
            ["sheets", ["appendRow", "updateRow"]],
            ["slack", ["postMessage"]],
        ]
    )


def test_a_valid_builtin_mutation_is_requested() -> None:
    outcome = _run("mutate", "await ctx.sheets.appendRow({spreadsheetId: 's1', values: ['a', 1]});")
    assert isinstance(outcome, MutationRequested)
    assert (outcome.connector, outcome.operation) == ("sheets", "appendRow")
    assert outcome.arguments == {"spreadsheetId": "s1", "values": ["a", 1]}


@pytest.mark.parametrize(
    ("call", "problem"),
    [
        ("ctx.sheets.appendRow({values: ['a']})", "'spreadsheetId' is a required property"),
        ("ctx.slack.postMessage({channel: 'c', text: 'hi', colour: 'red'})", "colour"),
        ("ctx.gmail.send({to: 5, subject: 's', body: 'b'})", "`to`"),
    ],
)
def test_an_invalid_builtin_mutation_is_a_logic_error(call: str, problem: str) -> None:
    outcome = _run("mutate", f"await {call};")
    assert isinstance(outcome, LogicFailure)
    assert outcome.error_name == "InvalidArguments"
    assert problem in outcome.message
