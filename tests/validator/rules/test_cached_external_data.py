import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from keep_sdk import validate
from tests.validator.cases import Case, assert_reports, assert_silent, workflow

RULE = "cached-external-data"

READ = "await ctx.sheets.listRows({ spreadsheetId: 'vips' })"
USE = "for (const m of await ctx.gmail.search({})) {\n  if (vips.includes(m.from)) await ctx.publish('in', { messageId: m.id, title: `VIP ${m.id}` });\n}"

INVALID = [
    Case(
        "nullish",
        workflow(
            producer=f"const vips = state?.vips ?? ({READ}).map((r) => r.values[0]); // here\n{USE}\nreturn {{ vips }};"
        ),
    ),
    Case(
        "or",
        workflow(
            producer=f"const vips = (state && state.vips) || ({READ}); // here\n{USE}\nreturn {{ vips }};"
        ),
    ),
    Case(
        "if-missing",
        workflow(
            producer=f"let vips = state?.vips;\nif (!vips && !state?.loaded) {{\n  vips = {READ}; // here\n}}\n{USE}\nreturn {{ vips }};"
        ),
    ),
    Case(
        "if-no-state",
        workflow(
            producer=f"let vips = [];\nif (!state) {{\n  vips = {READ}; // here\n}}\n{USE}\nreturn {{ vips }};"
        ),
    ),
    Case(
        "ternary",
        workflow(
            producer=f"const vips = state?.vips ? state.vips : {READ}; // here\n{USE}\nreturn {{ vips }};"
        ),
    ),
    Case(
        "in-prepare",
        workflow(
            prepare=f"const vips = state?.vips ?? {READ}; // here\nreturn {{ reservations: [], data: {{ vips }} }};"
        ),
    ),
]

VALID = [
    Case("every-run", workflow(producer=f"const vips = {READ};\n{USE}\nreturn state;")),
    Case(
        "cursor-argument",
        workflow(
            producer="const found = await ctx.gmail.search({ after: state?.cursor ?? undefined });\nreturn { cursor: found.length ? found[found.length - 1].receivedAt : state?.cursor };"
        ),
    ),
    Case(
        "both-branches-read",
        workflow(
            producer="let found;\nif (state?.cursor) {\n  found = await ctx.gmail.search({ after: state.cursor });\n} else {\n  found = await ctx.gmail.search({});\n}\nreturn { cursor: found.length ? found[0].receivedAt : null };"
        ),
    ),
    Case(
        "condition-not-on-state",
        workflow(
            producer=f"const day = new Date().getDay();\nlet vips = [];\nif (day === 1) {{\n  vips = {READ};\n}}\nreturn state;"
        ),
    ),
    Case(
        "peek-fallback",
        workflow(
            prepare="const events = state?.pending ? await ctx.getByIds('in', state.pending) : await ctx.peek('in', { limit: 1 });\nreturn { reservations: [], data: { n: events.length } };"
        ),
    ),
]


@pytest.mark.parametrize("case", INVALID, ids=lambda c: c.id)
def test_reports(case: Case) -> None:
    assert_reports(RULE, case)


@pytest.mark.parametrize("case", VALID, ids=lambda c: c.id)
def test_silent(case: Case) -> None:
    assert_silent(RULE, case)


LIST = "await ctx.sheets.listRows({ spreadsheetId: 'vips' })"
GUARDS = {
    "nullish": (lambda c: f"let vips = {c} ?? {LIST};", True),
    "or": (lambda c: f"let vips = {c} || {LIST};", True),
    "if": (lambda c: f"let vips = [];\nif (!{c}) {{\n  vips = {LIST};\n}}", True),
    "if-else-both": (
        lambda c: f"let vips;\nif ({c}) {{\n  vips = {LIST};\n}} else {{\n  vips = {LIST};\n}}",
        False,
    ),
    "ternary": (lambda c: f"let vips = {c} ? [] : {LIST};", True),
    "always": (lambda c: f"let vips = {LIST};", False),
}


@settings(max_examples=40, deadline=None)
@given(st.sampled_from(sorted(GUARDS)), st.sampled_from(["state?.vips", "state", "flags.vips"]))
def test_reported_exactly_when_the_read_runs_only_on_a_condition_on_state(
    guard: str, condition: str
) -> None:
    make, guarded = GUARDS[guard]
    before = "const flags = { vips: null };" if condition.startswith("flags") else ""
    source = workflow(before=before, producer=f"{make(condition)}\n{USE}\nreturn {{ vips }};")
    flagged = RULE in validate(source).rules()
    assert flagged == (guarded and condition.startswith("state"))
