import pytest

from keep_sdk import validate
from tests.validator.cases import Case, assert_reports, assert_silent, workflow

RULE = "missing-message-id"

INVALID = [
    Case(
        "missing",
        workflow(
            producer="await ctx.publish('in', { title: `a ${state}` }); // here\nreturn state;"
        ),
    ),
    Case(
        "in-loop",
        workflow(
            producer="for (const e of await ctx.gmail.search({})) {\n  await ctx.publish('in', { title: `Email ${e.id}`, payload: e }); // here\n}\nreturn state;"
        ),
    ),
    Case("no-event", workflow(producer="await ctx.publish('in'); // here\nreturn state;")),
    Case(
        "destructured",
        workflow(
            producer="const { publish } = ctx;\nawait publish('in', { title: `x ${state}` }); // here\nreturn state;"
        ),
    ),
    Case(
        "helper",
        workflow(
            before="async function emit(ctx, e) {\n  await ctx.publish('in', { title: `E ${e.id}` });\n}",
            producer="await emit(ctx, { id: 1 }); // here\nreturn state;",
        ),
    ),
    Case(
        "id-misspelt",
        workflow(
            producer="await ctx.publish('in', { messageID: 'x', title: `a ${state}` }); // here\nreturn state;"
        ),
    ),
]

VALID = [
    Case(
        "present",
        workflow(
            producer="await ctx.publish('in', { messageId: 'x', title: `a ${state}` });\nreturn state;"
        ),
    ),
    Case(
        "shorthand",
        workflow(
            producer="const messageId = 'x';\nawait ctx.publish('in', { messageId, title: `a ${state}` });\nreturn state;"
        ),
    ),
    Case(
        "next-may-omit",
        workflow(next_="await ctx.publish('out', { title: `Row ${prepared.data.id}` });"),
    ),
    Case(
        "spread",
        workflow(
            producer="const e = { messageId: 'a' };\nawait ctx.publish('in', { ...e, title: `a ${state}` });\nreturn state;"
        ),
    ),
]


@pytest.mark.parametrize("case", INVALID, ids=lambda c: c.id)
def test_reports(case: Case) -> None:
    assert_reports(RULE, case)


@pytest.mark.parametrize("case", VALID, ids=lambda c: c.id)
def test_silent(case: Case) -> None:
    assert_silent(RULE, case)


HELPER = (
    "async function emit(ctx, topic, e) {\n"
    "  await ctx.publish(topic, { title: `E ${e.id}` });\n"
    "}\n"
    "const NS = 'in';"
)


def test_helper_finding_is_at_each_call_and_names_the_topic_passed() -> None:
    source = workflow(
        before=HELPER,
        topics='"in": {}, "in.late": {}',
        producer="await emit(ctx, NS, { id: 1 });\nawait emit(ctx, `${NS}.late`, { id: 2 });\n"
        "return state;",
    )
    found = [d for d in validate(source).diagnostics if d.rule == RULE]
    lines = source.split("\n")
    calls = [n for n, line in enumerate(lines, 1) if line.startswith("await emit(")]
    assert [d.line for d in found] == calls
    assert ["`in`" in found[0].message, "`in.late`" in found[1].message] == [True, True]
    assert all("`topic`" not in d.message and "`emit` at line 2" in d.message for d in found)
    assert all([r.line for r in d.related] == [2] for d in found)
