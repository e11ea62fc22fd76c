import pytest

from tests.validator.cases import Case, assert_reports, assert_silent, workflow

RULE = "mutation-result-used"

APPEND = 'ctx.sheets.appendRow({ spreadsheetId: "s", values: [] })'

INVALID = [
    Case("const", workflow(mutate=f"const row = await {APPEND}; // here")),
    Case("assignment", workflow(mutate=f"let row;\nrow = await {APPEND}; // here")),
    Case("then-param", workflow(mutate=f"await {APPEND}.then((row) => row.id); // here")),
    Case("member-of-result", workflow(mutate=f"console.log((await {APPEND}).rowId); // here")),
    Case(
        "alias",
        workflow(
            mutate="const append = ctx.sheets.appendRow;\nconst r = await append({ spreadsheetId: 's', values: [] }); // here"
        ),
    ),
    Case("argument", workflow(mutate=f"console.log(await {APPEND}); // here")),
    Case("destructured", workflow(mutate=f"const {{ rowId }} = await {APPEND}; // here")),
    Case(
        "through-helper-return",
        workflow(
            before="const send = (ctx, m) => ctx.gmail.send(m);",
            mutate="const sent = await send(ctx, prepared.data); // here",
        ),
    ),
]

VALID = [
    Case("statement", workflow(mutate=f"await {APPEND};")),
    Case("return-await", workflow(mutate=f"return await {APPEND};")),
    Case("not-awaited", workflow(mutate=f"{APPEND};")),
    Case(
        "read-result-used",
        workflow(
            prepare="const rows = await ctx.sheets.listRows({ spreadsheetId: 's' });\nreturn { reservations: [], data: { n: rows.length } };"
        ),
    ),
    Case(
        "result-in-next", workflow(next_="const id = mutationResult.result?.rowId;\nreturn { id };")
    ),
    Case("promise-all-statement", workflow(mutate=f"await Promise.all([{APPEND}]);")),
    Case(
        "ternary-and-logical-statements",
        workflow(
            mutate=f"await (prepared.data.a ? {APPEND} : ctx.slack.postMessage({{ channel: 'c', text: 't' }}));\nprepared.data.b && {APPEND};"
        ),
    ),
    Case(
        "helper-return-not-used",
        workflow(
            before="const send = (ctx, m) => ctx.gmail.send(m);",
            mutate="await send(ctx, prepared.data);",
        ),
    ),
]


@pytest.mark.parametrize("case", INVALID, ids=lambda c: c.id)
def test_reports(case: Case) -> None:
    assert_reports(RULE, case)


@pytest.mark.parametrize("case", VALID, ids=lambda c: c.id)
def test_silent(case: Case) -> None:
    assert_silent(RULE, case)
