import pytest

from tests.validator.cases import Case, assert_reports, assert_silent, workflow

RULE = "unknown-operation"

INVALID = [
    Case("unknown-op", workflow(mutate="await ctx.gmail.sendMail({}); // here")),
    Case("unknown-connector", workflow(mutate="await ctx.outlook.send({}); // here")),
    Case(
        "destructured-connector",
        workflow(
            prepare="const { crm } = ctx;\nawait crm.list({}); // here\nreturn { reservations: [], data: {} };"
        ),
    ),
    Case(
        "aliased-op",
        workflow(
            prepare="const find = ctx.sheets.find; // here\nawait find({});\nreturn { reservations: [], data: {} };"
        ),
    ),
    Case(
        "nested-destructuring",
        workflow(
            prepare="const { gmail: { lookup } } = ctx; // here\nreturn { reservations: [], data: {} };"
        ),
    ),
    Case("literal-key", workflow(next_="ctx['slack']['post']({}); // here")),
    Case("ctx-method-typo", workflow(next_="await ctx.pubish('out', {}); // here")),
    Case("connector-called", workflow(mutate="await ctx.slack({ channel: '#c' }); // here")),
    Case(
        "helper",
        workflow(
            before="async function go(c) {\n  return c.gmail.fetch({}); // here\n}",
            prepare="await go(ctx);\nreturn { reservations: [], data: {} };",
        ),
    ),
]

VALID = [
    Case("known", workflow(mutate="await ctx.slack.postMessage({ channel: '#c', text: 't' });")),
    Case(
        "destructured-known",
        workflow(
            prepare="const { gmail: { search }, sheets } = ctx;\nawait search({});\nawait sheets.listRows({ spreadsheetId: 's' });\nreturn { reservations: [], data: {} };"
        ),
    ),
    Case(
        "other-objects",
        workflow(
            prepare="const api = { fetchAll() { return 1; } };\napi.fetchAll();\nreturn { reservations: [], data: {} };"
        ),
    ),
    Case("string-mention", workflow(next_="console.log('ctx.gmail.nothing()');")),
    Case(
        "ctx-methods",
        workflow(
            prepare="await ctx.peek('in');\nawait ctx.getByIds('in', ['a']);\nreturn { reservations: [], data: {} };"
        ),
    ),
]


@pytest.mark.parametrize("case", INVALID, ids=lambda c: c.id)
def test_reports(case: Case) -> None:
    assert_reports(RULE, case)


@pytest.mark.parametrize("case", VALID, ids=lambda c: c.id)
def test_silent(case: Case) -> None:
    assert_silent(RULE, case)
