import pytest

from tests.validator.cases import Case, assert_reports, assert_silent, workflow

RULE = "undeclared-topic"

INVALID = [
    Case(
        "publish-in-producer",
        workflow(
            producer="await ctx.publish('inn', { messageId: 'm', title: `t ${state}` }); // here\nreturn state;"
        ),
    ),
    Case("subscribe", workflow(subscribe='[\n"in",\n"missing", // here\n]')),
    Case("publishes", workflow(publishes='[\n"nope", // here\n]')),
    Case(
        "peek",
        workflow(
            prepare="await ctx.peek('ghost'); // here\nreturn { reservations: [], data: {} };"
        ),
    ),
    Case(
        "const-topic",
        workflow(
            before="const TOPIC = 'outt';",
            next_="await ctx.publish(TOPIC, { messageId: 'm', title: `t ${prepared}` }); // here",
        ),
    ),
    Case(
        "reservation",
        workflow(
            prepare="return { reservations: [{ topic: 'gone', ids: ['1'] }], data: {} }; // here"
        ),
    ),
    Case(
        "not-in-publishes",
        workflow(
            publishes='["out"]',
            next_="await ctx.publish('other', { messageId: 'm', title: `t ${prepared}` }); // here",
        ),
    ),
    Case(
        "template-literal",
        workflow(
            next_="await ctx.publish(`outs`, { messageId: 'm', title: `t ${prepared}` }); // here"
        ),
    ),
    Case(
        "misspelt-template-constant",
        workflow(
            before="const NS = 'orders';\nconst SUBMITTED = `${NS}.submitted`;\nconst SHIPPED = `${NS}.` + 'shipped';\nconst TYPO = `${NS}.submited`;",
            topics='"orders.submitted": {}, "orders.shipped": {}, "out": {}',
            subscribe="[SUBMITTED]",
            next_="await ctx.publish(TYPO, { messageId: 'm', title: `t ${prepared}` }); // here",
        ),
    ),
    Case(
        "misspelt-local-template",
        workflow(
            before="const NS = 'orders';\nconst SUBMITTED = `${NS}.submitted`;\nconst SHIPPED = `${NS}.` + 'shipped';",
            topics='"orders.submitted": {}, "orders.shipped": {}, "out": {}',
            subscribe="[SUBMITTED]",
            prepare="const late = await ctx.peek(`${NS}.shiped`); // here\n"
            "return { reservations: [], data: { late } };",
        ),
    ),
]

VALID = [
    Case(
        "declared",
        workflow(next_="await ctx.publish('out', { messageId: 'm', title: `t ${prepared}` });"),
    ),
    Case(
        "in-publishes",
        workflow(
            publishes='["out"]',
            next_="await ctx.publish('out', { messageId: 'm', title: `t ${prepared}` });",
        ),
    ),
    Case(
        "dynamic-name-not-checked",
        workflow(
            next_="await ctx.publish(prepared.data.topic, { messageId: 'm', title: `t ${prepared}` });"
        ),
    ),
    Case(
        "quoted-keys",
        workflow(
            topics='"in": {}, out: {}, [`other`]: {}',
            next_="await ctx.publish('out', { messageId: 'm', title: `t ${prepared}` });",
        ),
    ),
    Case("string-mention", workflow(next_="console.log(\"ctx.publish('nowhere')\");")),
    Case(
        "template-constants",
        workflow(
            before="const NS = 'orders';\nconst SUBMITTED = `${NS}.submitted`;\nconst SHIPPED = `${NS}.` + 'shipped';",
            topics='"orders.submitted": {}, "orders.shipped": {}, "out": {}',
            subscribe="[SUBMITTED]",
            prepare="const seen = await ctx.peek(`${NS}.shipped`);\n"
            "return { reservations: [], data: { seen } };",
            next_="await ctx.publish(SHIPPED, { messageId: 'm', title: `t ${prepared}` });",
        ),
    ),
]


@pytest.mark.parametrize("case", INVALID, ids=lambda c: c.id)
def test_reports(case: Case) -> None:
    assert_reports(RULE, case)


@pytest.mark.parametrize("case", VALID, ids=lambda c: c.id)
def test_silent(case: Case) -> None:
    assert_silent(RULE, case)
