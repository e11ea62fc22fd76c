import pytest

from tests.validator.cases import Case, assert_reports, assert_silent, workflow

RULE = "prepare-result-shape"

INVALID = [
    Case(
        "misspelled-wake-at",
        workflow(
            prepare="return { reservations: [], data: {}, wakeat: '2030-01-01T00:00:00Z' }; // here"
        ),
    ),
    Case("singular-reservation", workflow(prepare="return { reservation: [], data: {} }; // here")),
    Case(
        "reservations-object",
        workflow(prepare="return { reservations: { topic: 'in', ids: ['a'] } }; // here"),
    ),
    Case(
        "reservation-id-key",
        workflow(prepare="return { reservations: [{ topic: 'in', id: ['a'] }] }; // here"),
    ),
    Case(
        "reservation-ids-string",
        workflow(prepare="return { reservations: [{ topic: 'in', ids: 'a' }] }; // here"),
    ),
    Case(
        "reservation-without-topic",
        workflow(prepare="return { reservations: [{ ids: ['a'] }] }; // here"),
    ),
    Case("reservation-string", workflow(prepare="return { reservations: ['in:a'] }; // here")),
    Case("ui-string", workflow(prepare="return { reservations: [], ui: 'Send it' }; // here")),
    Case(
        "ui-unknown-key",
        workflow(prepare="return { reservations: [], ui: { titel: 'x' } }; // here"),
    ),
    Case(
        "arrow-prepare",
        workflow(prepare="const f = 1;\nreturn { reservations: [], data: {}, state: f }; // here"),
    ),
]

VALID = [
    Case(
        "full-result",
        workflow(
            prepare=(
                "const events = await ctx.peek('in', { limit: 5 });\n"
                "return { reservations: [{ topic: 'in', ids: events.map((e) => e.messageId) }], "
                "data: { n: events.length }, ui: { title: 'x' }, wakeAt: null };"
            )
        ),
    ),
    Case("snake-case-accepted", workflow(prepare="return { reservations: [], wake_at: null };")),
    Case(
        "computed-result", workflow(prepare="const result = { reservations: [] };\nreturn result;")
    ),
    Case(
        "nested-function-returns-other-objects",
        workflow(
            prepare="const pick = (e) => { return { id: e.messageId }; };\nreturn { reservations: [], data: [pick({})] };"
        ),
    ),
    Case(
        "spread-reservation",
        workflow(
            prepare="const r = { topic: 'in', ids: ['a'] };\nreturn { reservations: [{ ...r }] };"
        ),
    ),
    Case("empty", workflow(prepare="return {};")),
]


@pytest.mark.parametrize("case", INVALID, ids=lambda c: c.id)
def test_reports(case: Case) -> None:
    assert_reports(RULE, case)


@pytest.mark.parametrize("case", VALID, ids=lambda c: c.id)
def test_silent(case: Case) -> None:
    assert_silent(RULE, case)


def test_suggests_wake_at() -> None:
    [diagnostic] = [d for d in INVALID[0].report().diagnostics if d.rule == RULE]
    assert "did you mean `wakeAt`?" in diagnostic.message
