"""result-shape: reads of fields that a ctx call's declared result does not have."""

import json

import pytest
import quickjs
from hypothesis import given, settings
from hypothesis import strategies as st

from keep_sdk import validate
from keep_sdk.contract.results import EVENT_SCHEMA
from tests.validator.cases import Case, assert_reports, assert_silent, workflow

RULE = "result-shape"

SEARCH = 'await ctx.gmail.search({ query: "invoice" })'
ROWS = 'await ctx.sheets.listRows({ spreadsheetId: "s" })'
PEEK = 'await ctx.peek("in")'
RETURN = "return { reservations: [], data: {} };"

INVALID = [
    Case(
        "wrapper-key-defaulted",
        workflow(producer=f"const list = {SEARCH};\nconst ms = list.messages || []; // here"),
    ),
    Case(
        "wrapper-key-iterated",
        workflow(producer=f"const list = {SEARCH};\nfor (const m of list.messages) {{ // here\n}}"),
    ),
    Case(
        "event-id-after-index",
        workflow(
            prepare=f"const events = {PEEK};\nconst e = events[0];\nconst id = e.id; // here\n{RETURN}"
        ),
    ),
    Case(
        "event-id-destructured",
        workflow(prepare=f"const [e] = {PEEK};\nconst ids = [e.id]; // here\n{RETURN}"),
    ),
    Case(
        "event-id-in-map-callback",
        workflow(
            prepare=f"const events = {PEEK};\nconst ids = events.map((e) => e.id); // here\n{RETURN}"
        ),
    ),
    Case(
        "event-field-in-object-pattern",
        workflow(prepare=f"for (const {{ id, payload }} of {PEEK}) {{ // here\n}}\n{RETURN}"),
    ),
    Case(
        "row-field-after-filter-and-find",
        workflow(
            producer=f"const rows = {ROWS};\nconst row = rows.filter((r) => r.values.length).find((r) => r.rowId);\nreturn row.cells; // here"
        ),
    ),
    Case(
        "get-by-ids-item",
        workflow(
            prepare='const [e] = await ctx.getByIds("in", ["a"]);\nconst t = e.name; // here\n'
            + RETURN
        ),
    ),
    Case(
        "helper-return",
        workflow(
            before='async function inbox(ctx) {\n  return await ctx.gmail.search({ query: "x" });\n}',
            producer="const list = await inbox(ctx);\nreturn { n: (list.messages || []).length }; // here",
        ),
    ),
    Case(
        "arrow-helper-return",
        workflow(
            before='const pending = (ctx) => ctx.peek("in");',
            prepare=f"const [e] = await pending(ctx);\nconst id = e.id; // here\n{RETURN}",
        ),
    ),
    Case(
        "mutation-result-in-next",
        workflow(
            mutate='await ctx.sheets.appendRow({ spreadsheetId: "s", values: [1] });',
            next_="const row = mutationResult.result;\nreturn { last: row.id }; // here",
        ),
    ),
    Case(
        "nullable-row",
        workflow(
            producer='const row = await ctx.sheets.getRow({ spreadsheetId: "s", rowId: "r" });\nreturn row?.row; // here'
        ),
    ),
]

VALID = [
    Case(
        "declared-fields",
        workflow(
            prepare=f"const [e] = {PEEK};\nconst d = [e.messageId, e.title, e.payload.any, e.createdAt, e.topic];\n{RETURN}"
        ),
    ),
    Case(
        "array-members",
        workflow(
            producer=f"const list = {SEARCH};\nreturn {{ n: list.length, first: list[0]?.id }};"
        ),
    ),
    Case(
        "plain-read-of-array-field-returned",
        workflow(producer=f"const emails = {SEARCH};\nreturn {{ cursor: emails.lastCursor }};"),
    ),
    Case(
        "open-message-extra-field",
        workflow(producer=f"const [m] = {SEARCH};\nreturn {{ labels: m.labels }};"),
    ),
    Case(
        "reassigned-let",
        workflow(prepare=f"let e = ({PEEK})[0];\ne = {{ id: 1 }};\nconst x = e.id;\n{RETURN}"),
    ),
    Case(
        "shadowed-name",
        workflow(
            prepare=f"const events = {PEEK};\n{{ const events = [{{ id: 1 }}]; console.log(events[0].id); }}\n{RETURN}"
        ),
    ),
    Case(
        "undeclared-result",
        workflow(
            producer='const j = await ctx.approvals.request({ to: "a@b.co", subject: "s" });\nreturn j.anything;'
        ),
    ),
    Case(
        "map-result-unknown",
        workflow(
            prepare=f"const ids = ({PEEK}).map((e) => ({{ id: e.messageId }}));\nconst x = ids[0].id;\n{RETURN}"
        ),
    ),
    Case(
        "helper-with-two-returns",
        workflow(
            before='async function inbox(ctx, on) {\n  if (on) return { messages: [] };\n  return await ctx.gmail.search({ query: "x" });\n}',
            producer="const list = await inbox(ctx, true);\nreturn { n: (list.messages || []).length };",
        ),
    ),
    Case(
        "field-written-before-read",
        workflow(
            prepare=f"const events = {PEEK};\nevents.forEach((e) => {{ e.id = e.messageId; }});\nconst ids = events.map((e) => e.id);\n{RETURN}"
        ),
    ),
    Case(
        "object-assign",
        workflow(
            prepare=f"const [e] = {PEEK};\nObject.assign(e, {{ id: 1 }});\nconst x = e.id;\n{RETURN}"
        ),
    ),
    Case(
        "mutation-result-declared-field",
        workflow(
            mutate='await ctx.sheets.appendRow({ spreadsheetId: "s", values: [1] });',
            next_="return { last: mutationResult.result?.rowId, n: mutationResult.result.rowNumber };",
        ),
    ),
    Case(
        "two-possible-mutations",
        workflow(
            mutate='if (prepared.data.a) {\n  await ctx.sheets.appendRow({ spreadsheetId: "s", values: [1] });\n} else {\n  await ctx.slack.postMessage({ channel: "#ops", text: "x" });\n}',
            next_="return { ts: mutationResult.result?.ts };",
        ),
    ),
    Case(
        "not-awaited",
        workflow(prepare=f'const p = ctx.peek("in");\nconst x = p.id;\n{RETURN}'),
    ),
]


@pytest.mark.parametrize("case", INVALID, ids=lambda c: c.id)
def test_reports(case: Case) -> None:
    assert_reports(RULE, case)


@pytest.mark.parametrize("case", VALID, ids=lambda c: c.id)
def test_silent(case: Case) -> None:
    assert_silent(RULE, case)


EVENT_FIELDS = frozenset(EVENT_SCHEMA["properties"])
ARRAY_OWN = frozenset(
    json.loads(
        quickjs.Context().eval(
            "JSON.stringify(Object.getOwnPropertyNames(Array.prototype)"
            ".concat(Object.getOwnPropertyNames(Object.prototype)))"
        )
    )
)
"""What a JavaScript array has (Array.prototype and Object.prototype), asked of QuickJS."""
FIELD = st.one_of(
    st.sampled_from(sorted(EVENT_FIELDS)),
    st.from_regex(r"[a-z][A-Za-z]{0,7}", fullmatch=True),
)
EVENT_READS = [
    'const [e] = await ctx.peek("in");\nconst x = e.FIELD;',
    'const events = await ctx.peek("in");\nconst xs = events.map((e) => e.FIELD);',
    'for (const e of await ctx.peek("in")) {\n  console.log(e.FIELD);\n}',
    'const e = (await ctx.peek("in"))[0];\nconsole.log(e?.FIELD);',
]


@settings(max_examples=60, deadline=None)
@given(field=FIELD, form=st.sampled_from(EVENT_READS))
def test_an_event_read_is_reported_exactly_when_events_lack_the_field(
    field: str, form: str
) -> None:
    source = workflow(prepare=form.replace("FIELD", field) + "\n" + RETURN)
    report = validate(source)
    assert "syntax-error" not in report.rules()
    object_own = {"constructor", "toString", "valueOf", "hasOwnProperty", "isPrototypeOf"}
    expected = field not in EVENT_FIELDS and field not in object_own | {"toLocaleString"}
    assert (RULE in report.rules()) is expected, field


@settings(max_examples=40, deadline=None)
@given(field=FIELD)
def test_a_defaulted_read_of_a_search_result_is_reported_exactly_when_arrays_lack_it(
    field: str,
) -> None:
    source = workflow(
        producer=f"const list = {SEARCH};\nconst xs = list.{field} || [];\nreturn state;"
    )
    report = validate(source)
    assert (RULE in report.rules()) is (field not in ARRAY_OWN), field
