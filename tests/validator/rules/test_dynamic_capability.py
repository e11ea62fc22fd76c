import pytest

from tests.validator.cases import Case, assert_reports, assert_silent, workflow

RULE = "dynamic-capability"

INVALID = [
    Case(
        "computed-connector",
        workflow(
            prepare="const name = 'gmail';\nawait ctx[name].search({}); // here\nreturn { reservations: [], data: {} };"
        ),
    ),
    Case(
        "computed-operation",
        workflow(
            prepare="const op = prepared;\nawait ctx.gmail[op]({}); // here\nreturn { reservations: [], data: {} };"
        ),
    ),
    Case(
        "passed-to-unknown",
        workflow(
            prepare="const run = state.fn;\nawait run(ctx); // here\nreturn { reservations: [], data: {} };"
        ),
    ),
    Case(
        "stored-in-object",
        workflow(
            prepare="const bag = { c: ctx.sheets }; // here\nreturn { reservations: [], data: {} };"
        ),
    ),
    Case(
        "spread",
        workflow(
            prepare="const copy = { ...ctx }; // here\nreturn { reservations: [], data: {} };"
        ),
    ),
    Case(
        "rest",
        workflow(
            prepare="const { gmail, ...others } = ctx; // here\nreturn { reservations: [], data: {} };"
        ),
    ),
    Case("reassign-member", workflow(mutate="ctx.gmail = {}; // here")),
    Case("reassign-alias", workflow(mutate="let s = ctx.slack;\ns = null; // here")),
    Case(
        "object-keys",
        workflow(prepare="Object.keys(ctx); // here\nreturn { reservations: [], data: {} };"),
    ),
]

VALID = [
    Case(
        "helper-followed",
        workflow(
            before="async function read(c) {\n  return c.gmail.search({});\n}",
            prepare="await read(ctx);\nreturn { reservations: [], data: {} };",
        ),
    ),
    Case(
        "destructuring",
        workflow(
            prepare="const { gmail } = ctx;\nawait gmail.search({});\nreturn { reservations: [], data: {} };"
        ),
    ),
    Case(
        "literal-computed",
        workflow(
            prepare="await ctx['gmail']['search']({});\nreturn { reservations: [], data: {} };"
        ),
    ),
    Case("console-log-ctx", workflow(next_="console.log(ctx);")),
    Case(
        "computed-on-data",
        workflow(
            prepare="const k = 'a';\nconst v = state?.[k];\nreturn { reservations: [], data: { v } };"
        ),
    ),
]


@pytest.mark.parametrize("case", INVALID, ids=lambda c: c.id)
def test_reports(case: Case) -> None:
    assert_reports(RULE, case)


@pytest.mark.parametrize("case", VALID, ids=lambda c: c.id)
def test_silent(case: Case) -> None:
    assert_silent(RULE, case)
