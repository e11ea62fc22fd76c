import pytest

from tests.validator.cases import Case, assert_reports, assert_silent, workflow

RULE = "event-title"

INVALID = [
    Case(
        "missing",
        workflow(next_="await ctx.publish('out', { messageId: 'm', payload: 1 }); // here"),
    ),
    Case(
        "constant-string",
        workflow(
            next_="await ctx.publish('out', { messageId: 'm', title: 'Row created' }); // here"
        ),
    ),
    Case(
        "constant-template",
        workflow(
            next_="await ctx.publish('out', { messageId: 'm', title: `Row created` }); // here"
        ),
    ),
    Case(
        "constant-concat",
        workflow(
            next_="await ctx.publish('out', { messageId: 'm', title: 'Row ' + 'created' }); // here"
        ),
    ),
    Case("no-event", workflow(next_="await ctx.publish('out'); // here")),
    Case(
        "producer",
        workflow(
            producer="await ctx.publish('in', { messageId: 'x', title: \"New item\" }); // here\nreturn state;"
        ),
    ),
    Case(
        "alias",
        workflow(next_="const pub = ctx.publish;\nawait pub('out', { messageId: 'm' }); // here"),
    ),
]

VALID = [
    Case(
        "template",
        workflow(
            next_="await ctx.publish('out', { messageId: 'm', title: `Row ${prepared.data.id} created` });"
        ),
    ),
    Case(
        "variable",
        workflow(
            next_="const title = `Row ${prepared.data.id}`;\nawait ctx.publish('out', { messageId: 'm', title });"
        ),
    ),
    Case(
        "spread",
        workflow(
            next_="const event = prepared.data.event;\nawait ctx.publish('out', { ...event, messageId: 'm' });"
        ),
    ),
    Case(
        "event-variable",
        workflow(next_="const event = prepared.data.event;\nawait ctx.publish('out', event);"),
    ),
    Case(
        "concat-with-value",
        workflow(
            next_="await ctx.publish('out', { messageId: 'm', title: 'Row ' + prepared.data.id });"
        ),
    ),
]


@pytest.mark.parametrize("case", INVALID, ids=lambda c: c.id)
def test_reports(case: Case) -> None:
    assert_reports(RULE, case)


@pytest.mark.parametrize("case", VALID, ids=lambda c: c.id)
def test_silent(case: Case) -> None:
    assert_silent(RULE, case)
