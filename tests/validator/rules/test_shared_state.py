import pytest

from tests.validator.cases import Case, assert_reports, assert_silent, workflow

RULE = "shared-state"

INVALID = [
    Case("let-increment", workflow(before="let runs = 0;", next_="runs++; // here")),
    Case(
        "var-assign",
        workflow(before="var last = null;", producer="last = state; // here\nreturn state;"),
    ),
    Case(
        "set-add",
        workflow(
            before="const seen = new Set();",
            prepare="seen.add('x'); // here\nreturn { reservations: [], data: {} };",
        ),
    ),
    Case(
        "object-member",
        workflow(before="const cache = {};", next_="cache[prepared.data.id] = true; // here"),
    ),
    Case(
        "array-push-in-helper",
        workflow(
            before="const log = [];\nfunction remember(x) {\n  log.push(x); // here\n}",
            next_="remember(1);",
        ),
    ),
    Case("globalThis", workflow(next_="globalThis.lastRun = 1; // here")),
    Case(
        "implicit-global",
        workflow(prepare="total = 5; // here\nreturn { reservations: [], data: {} };"),
    ),
    Case(
        "read-of-written",
        workflow(
            before="let count = 0;",
            prepare="return { reservations: [], data: { count } }; // here",
            next_="count = 1; // here",
        ),
    ),
]

VALID = [
    Case(
        "const-config",
        workflow(
            before="const CONFIG = { sheet: 's' };\nconst NAME = 'x';",
            mutate="await ctx.sheets.appendRow({ spreadsheetId: CONFIG.sheet, values: [NAME] });",
        ),
    ),
    Case("local-let", workflow(next_="let n = 0;\nn++;\nreturn { n };")),
    Case(
        "helper-function",
        workflow(
            before="function double(x) {\n  return x * 2;\n}", next_="return { n: double(2) };"
        ),
    ),
    Case(
        "never-written-let",
        workflow(
            before="let LIMIT = 10;", prepare="return { reservations: [], data: { limit: LIMIT } };"
        ),
    ),
    Case(
        "state-argument",
        workflow(producer="const next = { ...state, runs: (state?.runs ?? 0) + 1 };\nreturn next;"),
    ),
    Case(
        "shadowed-local",
        workflow(
            before="let count = 0;\nfunction bump() {\n  count++;\n}",
            next_="let count = 5;\ncount++;\nreturn { count };",
        ),
    ),
]


@pytest.mark.parametrize("case", INVALID, ids=lambda c: c.id)
def test_reports(case: Case) -> None:
    assert_reports(RULE, case)


@pytest.mark.parametrize("case", VALID, ids=lambda c: c.id)
def test_silent(case: Case) -> None:
    assert_silent(RULE, case)
