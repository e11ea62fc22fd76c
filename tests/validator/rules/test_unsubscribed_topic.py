import pytest

from tests.validator.cases import Case, assert_reports, assert_silent, workflow

RULE = "unsubscribed-topic"

INVALID = [
    Case(
        "peek",
        workflow(prepare="await ctx.peek('out'); // here\nreturn { reservations: [], data: {} };"),
    ),
    Case(
        "getByIds",
        workflow(
            prepare="await ctx.getByIds('other', ['1']); // here\nreturn { reservations: [], data: {} };"
        ),
    ),
    Case(
        "reservation",
        workflow(
            prepare="return { reservations: [{ topic: 'out', ids: ['1'] }], data: {} }; // here"
        ),
    ),
    Case(
        "pushed-reservation",
        workflow(
            prepare="const r = [];\nr.push({ topic: 'other', ids: ['1'] }); // here\nreturn { reservations: r, data: {} };"
        ),
    ),
    Case(
        "destructured-peek",
        workflow(
            prepare="const { peek } = ctx;\nawait peek('other', { limit: 5 }); // here\nreturn { reservations: [], data: {} };"
        ),
    ),
    Case(
        "const-topic",
        workflow(
            before="const OUT = 'out';",
            prepare="await ctx.peek(OUT); // here\nreturn { reservations: [], data: {} };",
        ),
    ),
    Case(
        "helper",
        workflow(
            before="function reserve(ids) {\n  return [{ topic: 'other', ids }]; // here\n}",
            prepare="return { reservations: reserve(['1']), data: {} };",
        ),
    ),
]

VALID = [
    Case(
        "subscribed",
        workflow(
            prepare="const e = await ctx.peek('in');\nreturn { reservations: [{ topic: 'in', ids: e.map((x) => x.messageId) }], data: {} };"
        ),
    ),
    Case(
        "multi-subscribe",
        workflow(
            subscribe='["in", "other"]',
            prepare="await ctx.peek('other');\nreturn { reservations: [], data: {} };",
        ),
    ),
    Case(
        "topic-key-outside-prepare",
        workflow(next_="const info = { topic: 'out', ids: [1] };\nconsole.log(info);"),
    ),
    Case(
        "undeclared-left-to-other-rule",
        workflow(
            prepare="await ctx.getByIds('in', ['x']);\nreturn { reservations: [], data: {} };"
        ),
    ),
]


@pytest.mark.parametrize("case", INVALID, ids=lambda c: c.id)
def test_reports(case: Case) -> None:
    assert_reports(RULE, case)


@pytest.mark.parametrize("case", VALID, ids=lambda c: c.id)
def test_silent(case: Case) -> None:
    assert_silent(RULE, case)
