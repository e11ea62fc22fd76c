import pytest

from keep_sdk.model import HostPolicy
from tests.validator.cases import Case, assert_reports, assert_silent, workflow

RULE = "phase-forbidden-call"

INVALID = [
    Case(
        "mutation-in-prepare",
        workflow(
            prepare="await ctx.gmail.send({ to: 'a', subject: 's', body: 'b' }); // here\nreturn { reservations: [], data: {} };"
        ),
    ),
    Case(
        "mutation-in-producer",
        workflow(
            producer="await ctx.slack.postMessage({ channel: '#c', text: 't' }); // here\nreturn state;"
        ),
    ),
    Case("search-in-mutate", workflow(mutate="const r = await ctx.gmail.search({}); // here")),
    Case(
        "read-by-id-in-mutate-default-policy",
        workflow(mutate="await ctx.sheets.getRow({ spreadsheetId: 's', rowId: '1' }); // here"),
    ),
    Case(
        "read-in-next", workflow(next_="await ctx.sheets.listRows({ spreadsheetId: 's' }); // here")
    ),
    Case(
        "publish-in-prepare",
        workflow(
            prepare="await ctx.publish('out', { messageId: 'm', title: `t ${state}` }); // here\nreturn { reservations: [], data: {} };"
        ),
    ),
    Case(
        "publish-in-mutate-destructured",
        workflow(
            mutate="const { publish } = ctx;\nawait publish('out', { messageId: 'm', title: `t ${prepared}` }); // here"
        ),
    ),
    Case("peek-in-next", workflow(next_="const p = ctx.peek; await p('in'); // here")),
    Case("peek-in-producer", workflow(producer="await ctx.peek('in'); // here\nreturn state;")),
    Case(
        "helper-in-prepare",
        workflow(
            before="function store(sheets, row) {\n  return sheets.appendRow({ spreadsheetId: 's', values: row });\n}",
            prepare="await store(ctx.sheets, []); // here\nreturn { reservations: [], data: {} };",
        ),
    ),
    Case(
        "optional-chaining-and-literal-key",
        workflow(next_="await ctx?.gmail?.['search']?.({}); // here"),
    ),
    Case(
        "let-helper-in-prepare",
        workflow(
            before=(
                "let store = async (c, row) =>\n"
                "  c.sheets.appendRow({ spreadsheetId: 's', values: row });"
            ),
            prepare="await store(ctx, []); // here\nreturn { reservations: [], data: {} };",
        ),
    ),
]

VALID = [
    Case(
        "reads-in-prepare",
        workflow(
            prepare="const r = await ctx.gmail.search({});\nconst one = await ctx.gmail.getById({ id: r[0].id });\nreturn { reservations: [], data: { one } };"
        ),
    ),
    Case(
        "publish-in-next",
        workflow(
            next_="await ctx.publish('out', { messageId: 'm', title: `Row ${prepared.data.id}` });"
        ),
    ),
    Case(
        "mutation-in-mutate",
        workflow(
            mutate="await ctx.sheets.updateRow({ spreadsheetId: 's', rowId: '1', values: [] });"
        ),
    ),
    Case(
        "read-by-id-in-mutate-with-policy",
        workflow(
            mutate="const row = await ctx.sheets.getRow({ spreadsheetId: 's', rowId: '1' });\nif (!row) await ctx.sheets.appendRow({ spreadsheetId: 's', values: [] });"
        ),
        HostPolicy(mutate_reads="by_id"),
    ),
    Case(
        "console-everywhere",
        workflow(
            mutate="console.log('m');",
            next_="console.warn('n');",
            prepare="console.error('p');\nreturn { reservations: [], data: {} };",
        ),
    ),
    Case(
        "comment-and-string",
        workflow(next_="// await ctx.gmail.send({})\nconst s = 'ctx.gmail.send()';"),
    ),
]


@pytest.mark.parametrize("case", INVALID, ids=lambda c: c.id)
def test_reports(case: Case) -> None:
    assert_reports(RULE, case)


@pytest.mark.parametrize("case", VALID, ids=lambda c: c.id)
def test_silent(case: Case) -> None:
    assert_silent(RULE, case)
