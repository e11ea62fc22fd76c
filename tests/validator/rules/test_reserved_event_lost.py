import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from keep_sdk import validate
from tests.validator.cases import Case, assert_reports, assert_silent, workflow

RULE = "reserved-event-lost"

ALL_IDS = "ids: events.map((e) => e.messageId)"


def prepare(*lines: str) -> str:
    return "\n".join(lines)


INVALID = [
    Case(
        "first-by-index",
        workflow(
            prepare=prepare(
                "const events = await ctx.peek('in', { limit: 5 });",
                "const event = events[0];",
                f"return {{ reservations: [{{ topic: 'in', {ALL_IDS} }}], data: {{ id: event.payload.id }} }}; // here",
            )
        ),
    ),
    Case(
        "first-destructured",
        workflow(
            prepare=prepare(
                "const events = await ctx.peek('in', { limit: 10 });",
                "const [first] = events;",
                "if (!first) return { reservations: [], data: {} };",
                f"return {{ reservations: [{{ topic: 'in', {ALL_IDS} }}], data: first.payload }}; // here",
            )
        ),
    ),
    Case(
        "first-inline",
        workflow(
            prepare=prepare(
                "const events = await ctx.peek('in', { limit: 3 });",
                f"return {{ reservations: [{{ topic: 'in', {ALL_IDS} }}], data: {{ to: events[0].payload.to }} }}; // here",
            )
        ),
    ),
    Case(
        "ids-variable",
        workflow(
            prepare=prepare(
                "const events = await ctx.peek('in', { limit: 3 });",
                "const ids = events.map((e) => e.messageId);",
                "return { reservations: [{ topic: 'in', ids }], data: { id: events[0].payload.id } }; // here",
            )
        ),
    ),
    Case(
        "no-data",
        workflow(
            prepare=prepare(
                "const events = await ctx.peek('in');",
                f"return {{ reservations: [{{ topic: 'in', {ALL_IDS} }}], data: {{}} }}; // here",
            ),
            mutate="await ctx.gmail.send({ to: 'desk@example.com', subject: 'New', body: 'x' });",
        ),
    ),
    Case(
        "multiline-return",
        workflow(
            prepare=prepare(
                "const events = await ctx.peek('in', { limit: 5 });",
                "const event = events[0];",
                "return {",
                f"  reservations: [{{ topic: 'in', {ALL_IDS} }}], // here",
                "  data: { id: event.payload.id },",
                "};",
            )
        ),
    ),
]

VALID = [
    Case(
        "drops-events",
        workflow(
            prepare=prepare(
                "const events = await ctx.peek('in');",
                f"return {{ reservations: [{{ topic: 'in', {ALL_IDS} }}], data: {{}} }};",
            )
        ),
    ),
    Case(
        "drops-events",
        workflow(
            prepare=prepare(
                "const events = await ctx.peek('in');",
                f"return {{ reservations: [{{ topic: 'in', {ALL_IDS} }}], data: {{}} }};",
            )
        ),
    ),
    Case(
        "limit-one",
        workflow(
            prepare=prepare(
                "const events = await ctx.peek('in', { limit: 1 });",
                f"return {{ reservations: [{{ topic: 'in', {ALL_IDS} }}], data: {{ id: events[0].payload.id }} }};",
            )
        ),
    ),
    Case(
        "reserves-the-first-only",
        workflow(
            prepare=prepare(
                "const events = await ctx.peek('in', { limit: 5 });",
                "const event = events[0];",
                "return { reservations: [{ topic: 'in', ids: [event.messageId] }], data: { id: event.payload.id } };",
            )
        ),
    ),
    Case(
        "data-of-all",
        workflow(
            prepare=prepare(
                "const events = await ctx.peek('in', { limit: 5 });",
                f"return {{ reservations: [{{ topic: 'in', {ALL_IDS} }}], data: {{ ids: events.map((e) => e.payload.id) }} }};",
            )
        ),
    ),
    Case(
        "count-of-all",
        workflow(
            prepare=prepare(
                "const events = await ctx.peek('in', { limit: 5 });",
                f"return {{ reservations: [{{ topic: 'in', {ALL_IDS} }}], data: {{ count: events.length }} }};",
            )
        ),
    ),
    Case(
        "destructured-peek",
        workflow(
            prepare=prepare(
                "const [event] = await ctx.peek('in', { limit: 5 });",
                "if (!event) return { reservations: [], data: {} };",
                "return { reservations: [{ topic: 'in', ids: [event.messageId] }], data: event.payload };",
            )
        ),
    ),
]


@pytest.mark.parametrize("case", INVALID, ids=lambda c: c.id)
def test_reports(case: Case) -> None:
    assert_reports(RULE, case)


@pytest.mark.parametrize("case", VALID, ids=lambda c: c.id)
def test_silent(case: Case) -> None:
    assert_silent(RULE, case)


DATA = {
    "first": ("data: { id: events[0].payload.id }", True),
    "first-named": ("data: { id: head.payload.id }", True),
    "all": ("data: { ids: events.map((e) => e.payload.id) }", False),
    "count": ("data: { n: events.length }", False),
    "none": ("data: {}", True),
}
RESERVE = {"all": ("events.map((e) => e.messageId)", True), "first": ("[head.messageId]", False)}


@settings(max_examples=40, deadline=None)
@given(
    st.sampled_from([None, 1, 2, 10]),
    st.sampled_from(sorted(RESERVE)),
    st.sampled_from(sorted(DATA)),
)
def test_reported_exactly_when_reserved_events_outnumber_the_data_mutate_gets(
    limit: int | None, reserve: str, data: str
) -> None:
    options = f", {{ limit: {limit} }}" if limit is not None else ""
    ids, reserves_all = RESERVE[reserve]
    carried, loses = DATA[data]
    source = workflow(
        prepare=prepare(
            f"const events = await ctx.peek('in'{options});",
            "const head = events[0];",
            "if (!head) return { reservations: [], data: {} };",
            f"return {{ reservations: [{{ topic: 'in', ids: {ids} }}], {carried} }};",
        ),
        mutate="await ctx.gmail.send({ to: 'desk@example.com', subject: 'New', body: 'x' });",
    )
    flagged = RULE in validate(source).rules()
    assert flagged == (limit != 1 and reserves_all and loses)
