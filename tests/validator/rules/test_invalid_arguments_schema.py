"""invalid-arguments: literal arguments checked against the whole schema of their key
(pattern, lengths, item counts, bounds, enum, format, nested values), with a property test
that the validator and the schema the host checks at run time agree on generated channels."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from jsonschema import Draft202012Validator

from keep_sdk import validate
from keep_sdk.contract import ConnectorManifest, Manifest, OperationManifest
from keep_sdk.model import OperationKind
from keep_sdk.plugins import default_plugins
from keep_sdk.validator import validate as validate_with
from tests.validator.cases import Case, assert_reports, assert_silent, workflow

RULE = "invalid-arguments"

INVALID = [
    Case(
        "pattern",
        workflow(
            mutate="await ctx.slack.postMessage({ channel: '#Sales Team', text: 'hi' }); // here"
        ),
    ),
    Case(
        "min-items",
        workflow(mutate="await ctx.sheets.appendRow({ spreadsheetId: 's', values: [] }); // here"),
    ),
    Case(
        "min-length",
        workflow(mutate="await ctx.slack.postMessage({ channel: '#ops', text: `` }); // here"),
    ),
    Case(
        "maximum",
        workflow(
            producer="const m = await ctx.gmail.search({ limit: 501 }); // here\nreturn state;"
        ),
    ),
    Case(
        "minimum",
        workflow(
            producer="const r = await ctx.sheets.listRows({ spreadsheetId: 's', limit: 0 }); // here\nreturn state;"
        ),
    ),
    Case(
        "email-pattern-in-durable",
        workflow(mutate="await ctx.approvals.request({ to: 'boss', subject: 's' }); // here"),
    ),
]

VALID = [
    Case(
        "matching-pattern",
        workflow(mutate="await ctx.slack.postMessage({ channel: '#sales-team', text: 'hi' });"),
    ),
    Case(
        "computed-value",
        workflow(
            mutate="await ctx.sheets.appendRow({ spreadsheetId: 's', values: prepared.data.row });"
        ),
    ),
    Case(
        "template-with-substitution",
        workflow(
            mutate="await ctx.slack.postMessage({ channel: `#${prepared.data.c}`, text: 'x' });"
        ),
    ),
    Case(
        "escaped-string-that-holds",
        workflow(mutate="await ctx.slack.postMessage({ channel: '#ops', text: '\\n' });"),
    ),
    Case(
        "array-with-computed-item",
        workflow(
            mutate="await ctx.sheets.appendRow({ spreadsheetId: 's', values: [prepared.data.a] });"
        ),
    ),
]


@pytest.mark.parametrize("case", INVALID, ids=lambda c: c.id)
def test_reports(case: Case) -> None:
    assert_reports(RULE, case)


@pytest.mark.parametrize("case", VALID, ids=lambda c: c.id)
def test_silent(case: Case) -> None:
    assert_silent(RULE, case)


def test_the_message_names_the_broken_rule_and_the_hint_the_schema() -> None:
    report = validate(INVALID[0].source)
    [diagnostic] = [d for d in report.diagnostics if d.rule == RULE]
    assert "`channel`" in diagnostic.message
    assert "does not match" in diagnostic.message
    assert "pattern" in (diagnostic.hint or "")


def _manifest(arguments: dict[str, Any]) -> Manifest:
    op = OperationManifest(
        name="tag", kind=OperationKind.READ, permission="notes.read", arguments=arguments
    )
    return Manifest(connectors=[ConnectorManifest(name="notes", operations=[op])])


NESTED = {
    "type": "object",
    "properties": {
        "kind": {"enum": ["bug", "idea"]},
        "on": {"type": "string", "format": "date"},
        "item": {
            "type": "object",
            "properties": {"tags": {"type": "array", "items": {"$ref": "#/$defs/Tag"}}},
        },
    },
    "$defs": {"Tag": {"type": "string", "pattern": "^[a-z]+$"}},
    "additionalProperties": False,
}


@pytest.mark.parametrize(
    ("argument", "flagged"),
    [
        ("{ kind: 'bug' }", False),
        ("{ kind: 'feature' }", True),
        ("{ on: '2026-02-30' }", True),
        ("{ on: '2026-02-28' }", False),
        ("{ item: { tags: ['ok', 'Not OK'] } }", True),
        ("{ item: { tags: ['ok', 'fine'] } }", False),
    ],
)
def test_enum_format_and_nested_refs(argument: str, flagged: bool) -> None:
    source = workflow(producer=f"await ctx.notes.tag({argument});\nreturn state;")
    report = validate_with(source, connectors=_manifest(NESTED))
    assert (RULE in report.rules()) is flagged, [d.message for d in report.diagnostics]


CHANNEL = default_plugins().manifest().operation("slack", "postMessage").arguments


@settings(max_examples=60, deadline=None)
@given(channel=st.text(st.sampled_from("#aZ_- 9é"), max_size=8))
def test_a_literal_channel_is_flagged_exactly_when_the_schema_refuses_it(channel: str) -> None:
    source = workflow(
        mutate=f"await ctx.slack.postMessage({{ channel: {json.dumps(channel)}, text: 'x' }});"
    )
    refused = any(Draft202012Validator(CHANNEL).iter_errors({"channel": channel, "text": "x"}))
    assert (RULE in validate(source).rules()) is refused
