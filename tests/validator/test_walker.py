"""Expressions the walk skips by their text still report whatever is inside them.

The walk does not evaluate an object or array literal, or an ``if``
condition, whose text shows it can find nothing (see `Literals.is_plain_text`
in `keep_sdk.validator.walk.literals`); each case here looks like plain data
but is not, and must keep its diagnostic.
"""

from __future__ import annotations

import pytest

from keep_sdk.validator.walk.literals import may_assign
from tests.validator.cases import Case, assert_reports, workflow

CASES = [
    (
        "dynamic-capability",
        Case(
            "shorthand-ctx",
            workflow(mutate="        return { ctx }; // here"),
        ),
    ),
    (
        "dynamic-capability",
        Case(
            "connector-in-array",
            workflow(mutate="        const mail = ctx.gmail;\n        return [mail]; // here"),
        ),
    ),
    (
        "dynamic-capability",
        Case(
            "non-ascii-alias",
            workflow(
                mutate="        const courriél = ctx.gmail;\n        return { courriél }; // here"
            ),
        ),
    ),
    (
        "shared-state",
        Case(
            "module-state-in-object",
            workflow(
                before="let counter = 0;",
                mutate="        return { seen: counter }; // here",
                next_="        counter += 1; // here",
            ),
        ),
    ),
    (
        "nondeterministic-mutate",
        Case(
            "tagged-template-global",
            workflow(
                mutate=(
                    "        const at = { stamp: Date`now` }; // here\n"
                    '        await ctx.gmail.send({ to: "a", subject: "s", body: "b" });'
                )
            ),
        ),
    ),
    (
        "shared-state",
        Case(
            "tagged-template-helper",
            workflow(
                before="let counter = 0;\nfunction bump() {\n  counter += 1; // here\n}",
                prepare=(
                    "        const note = { n: bump`x` };\n"
                    "        return { reservations: [], data: { note } };"
                ),
            ),
        ),
    ),
    (
        "undeclared-topic",
        Case(
            "reservation-literal",
            workflow(
                prepare=(
                    '        return { reservations: [{ topic: "nope", ids: ["1"] }], data: {} };'
                    " // here"
                )
            ),
        ),
    ),
    (
        "unknown-operation",
        Case(
            "condition-capability", workflow(mutate="        if (ctx.gmail.nope) return; // here")
        ),
    ),
    (
        "shared-state",
        Case(
            "condition-state",
            workflow(
                before="let counter = 0;",
                mutate="        if (counter > 0) return; // here",
                next_="        counter += 1; // here",
            ),
        ),
    ),
    (
        "shared-state",
        Case(
            "condition-shift-assignment",
            workflow(
                before="let bits = 1;", mutate="        if ((bits <<= 1) > 4) return; // here"
            ),
        ),
    ),
    (
        "shared-state",
        Case(
            "condition-implicit-global",
            workflow(mutate="        if (found = prepared.data.x) return; // here"),
        ),
    ),
    (
        "shared-state",
        Case(
            "object-compound-assignment",
            workflow(mutate="        const o = { n: total += prepared.data.n }; // here"),
        ),
    ),
    (
        "shared-state",
        Case("array-update", workflow(mutate="        const o = [seen++]; // here")),
    ),
]


@pytest.mark.parametrize(
    ("text", "assigns"),
    [
        (b"a = b", True),
        (b"a += 1", True),
        (b"a ??= b", True),
        (b"a <<= b", True),
        (b"a>>>=b", True),
        (b"x => y", True),
        (b"=a", True),
        (b"a == b", False),
        (b"a === b", False),
        (b"a != b", False),
        (b"a !== b", False),
        (b"a <= b", False),
        (b"a>=b", False),
    ],
)
def test_may_assign_tells_assignments_from_comparisons(text: bytes, assigns: bool) -> None:
    assert may_assign(text) is assigns


@pytest.mark.parametrize(("rule", "case"), CASES, ids=[case.id for _, case in CASES])
def test_literal_that_looks_plain_still_reports(rule: str, case: Case) -> None:
    assert_reports(rule, case)
