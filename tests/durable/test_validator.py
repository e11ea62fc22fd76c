"""The validator treats a durable operation exactly as a mutation."""

from __future__ import annotations

import pytest

from keep_sdk import validate
from keep_sdk.contract.phases import allowed_phases
from keep_sdk.model import HandlerPhase, OperationKind
from tests.durable.harness import DOCUMENT_REQUEST

IN_PREPARE = DOCUMENT_REQUEST.replace(
    'const [e] = await ctx.peek("document.needed", { limit: 1 });',
    'const [e] = await ctx.peek("document.needed", { limit: 1 });\n'
    '        await ctx.approvals.request({ to: "a@example.com", subject: "x" });',
)
TWICE = DOCUMENT_REQUEST.replace(
    "await ctx.approvals.request({",
    'await ctx.approvals.request({ to: "a@example.com", subject: "first" });\n'
    "        await ctx.approvals.request({",
)
IN_TRY = DOCUMENT_REQUEST.replace(
    "await ctx.approvals.request({\n          to: prepared.data.client,\n"
    "          subject: `Please upload your ${prepared.data.document}`,\n        });",
    'try { await ctx.approvals.request({ to: "a@example.com", subject: "x" }); } catch (e) {}',
)


def test_the_phase_table_allows_durable_operations_only_in_mutate() -> None:
    assert allowed_phases(OperationKind.DURABLE) == frozenset({HandlerPhase.MUTATE})
    assert allowed_phases(OperationKind.DURABLE, "by_id") == frozenset({HandlerPhase.MUTATE})


def test_the_example_is_valid() -> None:
    report = validate(DOCUMENT_REQUEST)
    assert report.ok, report


@pytest.mark.parametrize(
    ("source", "rule"),
    [
        (IN_PREPARE, "phase-forbidden-call"),
        (TWICE, "multiple-mutations"),
        (IN_TRY, "mutation-in-try"),
    ],
)
def test_a_misplaced_durable_call_is_rejected_like_a_mutation(source: str, rule: str) -> None:
    assert source != DOCUMENT_REQUEST
    report = validate(source)
    assert not report.ok
    assert rule in {d.rule for d in report.diagnostics}, report
