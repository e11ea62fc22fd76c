import pytest

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
            before="async function emit(ctx, e) {\n  await ctx.publish('in', { title: `E ${e.id}` }); // here\n}",
            producer="await emit(ctx, { id: 1 });\nreturn state;",
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
