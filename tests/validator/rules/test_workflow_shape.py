import pytest

from tests.validator.cases import Case, assert_reports, assert_silent, workflow

RULE = "workflow-shape"

CONSUMER = (
    "subscribe: ['in'],\n"
    "async prepare(ctx) { return { reservations: [], data: {} }; },\n"
    "async mutate(ctx, prepared) {},\n"
    "async next(ctx, prepared) {},\n"
)


def script(body: str, before: str = "") -> str:
    return f"{before}\nexport default Keep.workflow({{\n  topics: {{ in: {{}} }},\n{body}\n}});\n"


INVALID = [
    Case("no-export", "// here\nconst workflow = { topics: {} };\n"),
    Case("not-keep-workflow", "export default { topics: {} }; // here\n"),
    Case("named-export", workflow(before="export const helper = 1; // here")),
    Case(
        "missing-next",
        script(
            f"consumers: {{\n  c: Keep.consumer({{ // here\n{CONSUMER.replace('async next(ctx, prepared) {},', '')} }}),\n}},"
        ),
    ),
    Case(
        "missing-subscribe",
        script(
            f"consumers: {{\n  c: {{ // here\n{CONSUMER.replace(chr(115) + 'ubscribe: [' + chr(39) + 'in' + chr(39) + '],', '')} }},\n}},"
        ),
    ),
    Case(
        "reserved-name",
        script("name: 'keep-worker:0', // here\nproducers: { p: async (ctx, state) => state },"),
    ),
    Case("handler-not-function", script("producers: {\n  p: { handler: 'go' }, // here\n},")),
    Case(
        "producer-without-handler",
        script("producers: {\n  p: { schedule: { interval: '5m' } }, // here\n},"),
    ),
    Case(
        "bad-interval",
        script(
            "producers: {\n  p: { schedule: { interval: 300 }, handler: async (ctx) => {} }, // here\n},"
        ),
    ),
    Case(
        "bad-cron",
        script(
            "producers: {\n  p: { schedule: { cron: '* * *' }, handler: async (ctx) => {} }, // here\n},"
        ),
    ),
    Case(
        "both-interval-and-cron",
        script(
            "producers: {\n  p: { schedule: { interval: '1m', cron: '* * * * *' }, handler: async (ctx) => {} }, // here\n},"
        ),
    ),
    Case(
        "unknown-key",
        script("producer: {}, // here\nproducers: { p: async (ctx, state) => state },"),
    ),
    Case(
        "spread-consumers", script("consumers: { ...others }, // here", before="const others = {};")
    ),
    Case("no-handlers", "export default Keep.workflow({ topics: {} }); // here\n"),
    Case(
        "object-producer-without-schedule",
        script("producers: {\n  p: { // here\n    handler: async (ctx, state) => state,\n  },\n},"),
    ),
    Case(
        "object-producer-with-publishes-but-no-schedule",
        script("producers: {\n  p: { publishes: ['in'], handler: async (ctx) => {} }, // here\n},"),
    ),
    Case(
        "phase-names-a-let-function",
        script(
            "consumers: {\n  c: Keep.consumer({\n    subscribe: ['in'],\n"
            "    prepare: prep, // here\n"
            "    async mutate(ctx, prepared) {},\n    async next(ctx, prepared) {},\n  }),\n},",
            before="let prep = async (ctx) => ({ reservations: [], data: {} });",
        ),
    ),
    Case(
        "template-of-a-variable",
        script(
            "consumers: { c: { subscribe: [TOPIC], // here\n"
            "  async prepare(ctx) { return { reservations: [], data: {} }; },\n"
            "  async mutate(ctx, prepared) {},\n"
            "  async next(ctx, prepared) {} } },",
            before="let NS = 'in';\nconst TOPIC = `${NS}`;",
        ),
    ),
]

VALID = [
    Case("bare-producer-arrow", script("producers: { p: async (ctx, state) => state },")),
    Case(
        "method-shorthand-producer", script("producers: { async p(ctx, state) { return state; } },")
    ),
    Case(
        "cron",
        script(
            "producers: { p: { schedule: { cron: '*/5 * * * *' }, handler: async (ctx) => {} } },"
        ),
    ),
    Case(
        "interval",
        script("producers: { p: { schedule: { interval: '5m' }, handler: async (ctx) => {} } },"),
    ),
    Case("plain-object-consumer", script(f"consumers: {{ c: {{\n{CONSUMER}}} }},")),
    Case(
        "named-functions",
        script(
            "consumers: { c: Keep.consumer({ subscribe: ['in'], prepare, mutate, next: finish }) },",
            before=(
                "async function prepare(ctx) { return { reservations: [], data: {} }; }\n"
                "const mutate = async (ctx, prepared) => {};\n"
                "function finish(ctx, prepared) {}"
            ),
        ),
    ),
    Case(
        "workflow-in-const",
        "const wf = Keep.workflow({ topics: { in: {} }, producers: { p: async (ctx, state) => state } });\nexport default wf;\n",
    ),
    Case(
        "template-constant-topics",
        "const NS = 'orders';\nconst SUBMITTED = `${NS}.submitted`;\nconst SHIPPED = `${NS}.` + 'shipped';\n"
        "export default Keep.workflow({\n"
        "  topics: { [SUBMITTED]: {}, [SHIPPED]: {} },\n"
        "  consumers: { c: { subscribe: [SUBMITTED], publishes: [SHIPPED],\n"
        "    async prepare(ctx) { return { reservations: [], data: {} }; },\n"
        "    async mutate(ctx, prepared) {},\n"
        "    async next(ctx, prepared) {} } },\n"
        "});\n",
    ),
]


@pytest.mark.parametrize("case", INVALID, ids=lambda c: c.id)
def test_reports(case: Case) -> None:
    assert_reports(RULE, case)


@pytest.mark.parametrize("case", VALID, ids=lambda c: c.id)
def test_silent(case: Case) -> None:
    assert_silent(RULE, case)
