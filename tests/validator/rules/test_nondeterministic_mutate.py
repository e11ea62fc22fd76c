import pytest

from keep_sdk import validate
from tests.validator.cases import Case, assert_reports, assert_silent, workflow

RULE = "nondeterministic-mutate"

APPEND = "await ctx.sheets.appendRow({{ spreadsheetId: 's', values: [{value}] }});"

INVALID = [
    Case("date-now", workflow(mutate=APPEND.format(value="Date.now()") + " // here")),
    Case(
        "new-date", workflow(mutate="const at = new Date(); // here\n" + APPEND.format(value="at"))
    ),
    Case(
        "math-random",
        workflow(mutate="const id = Math.random(); // here\n" + APPEND.format(value="id")),
    ),
    Case("date-call", workflow(mutate="const at = Date(); // here\n" + APPEND.format(value="at"))),
    Case(
        "performance",
        workflow(mutate="const t = performance.now(); // here\n" + APPEND.format(value="t")),
    ),
    Case(
        "helper",
        workflow(
            before="function stamp() {\n  return new Date().toISOString();\n}",
            mutate=APPEND.format(value="stamp()") + " // here",
        ),
    ),
    Case(
        "helper-of-helper",
        workflow(
            before="function now() {\n  return Date.now();\n}\nfunction stamp(x) {\n"
            "  return { ...x, at: now() };\n}",
            mutate="const row = stamp({ a: 1 }); // here\n" + APPEND.format(value="row.at"),
        ),
    ),
    Case(
        "crypto",
        workflow(mutate="const id = crypto.randomUUID(); // here\n" + APPEND.format(value="id")),
    ),
]

VALID = [
    Case("from-prepared", workflow(mutate=APPEND.format(value="prepared.data.at"))),
    Case(
        "in-prepare",
        workflow(
            prepare="return { reservations: [], data: { at: new Date().toISOString(), r: Math.random() } };"
        ),
    ),
    Case(
        "date-with-argument",
        workflow(
            mutate="const d = new Date(prepared.data.at);\n"
            + APPEND.format(value="d.toISOString()")
        ),
    ),
    Case(
        "shadowed-math",
        workflow(
            mutate="const Math = { random: () => 4 };\n" + APPEND.format(value="Math.random()")
        ),
    ),
    Case("in-next", workflow(next_="return { at: Date.now() };")),
]


@pytest.mark.parametrize("case", INVALID, ids=lambda c: c.id)
def test_reports(case: Case) -> None:
    assert_reports(RULE, case)


@pytest.mark.parametrize("case", VALID, ids=lambda c: c.id)
def test_silent(case: Case) -> None:
    assert_silent(RULE, case)


def test_helper_finding_is_at_the_call_and_names_the_helper() -> None:
    source = workflow(
        before="function stamp() {\n  return new Date().toISOString();\n}",
        mutate=APPEND.format(value="stamp()"),
    )
    [diagnostic] = [d for d in validate(source).diagnostics if d.rule == RULE]
    call_line = next(
        n for n, line in enumerate(source.split("\n"), 1) if "values: [stamp()]" in line
    )
    assert (diagnostic.line, diagnostic.handler) == (call_line, "consumers.work.mutate")
    assert "`new Date()`" in diagnostic.message
    assert "`stamp` at line 2" in diagnostic.message
    assert [(r.line, r.message) for r in diagnostic.related] == [(2, "`new Date()` in `stamp`")]
