import pytest

from tests.validator.cases import Case, assert_reports, assert_silent, workflow

RULE = "legacy-format"

READ = "return { reservations: [], data: {} };"

OLD = (
    "const workflow = { // here\n"
    "  topics: { t: {} },\n"
    "  consumers: {\n"
    "    c: {\n"
    "      subscribe: ['t'],\n"
    "      prepare: async (state) => {\n"
    "        const events = await Topics.peek({ topic: 't', limit: 5 }); // here\n"
    "        return { reservations: [], data: events };\n"
    "      },\n"
    "      mutate: async (prepared) => {\n"
    "        await GoogleSheets.api({ method: 'append', values: prepared.data }); // here\n"
    "      },\n"
    "      next: async (prepared, mutationResult) => __state__, // here\n"
    "    },\n"
    "  },\n"
    "};\n"
)

INVALID = [
    Case("old-script", OLD),
    Case("let-workflow", "let workflow = { topics: {}, consumers: {} }; // here\n"),
    Case(
        "half-converted-gmail",
        workflow(prepare=f"const m = await Gmail.api({{ q: 'x' }}); // here\n{READ}"),
    ),
    Case(
        "topics-publish",
        workflow(
            next_="await Topics.publish({ topic: 'out', event: { messageId: 'm' } }); // here"
        ),
    ),
    Case(
        "topics-register-input",
        workflow(producer="Topics.registerInput({ source: 'x' }); // here\nreturn state;"),
    ),
    Case("notion-tool", workflow(next_="await Notion.api({ method: 'pages.create' }); // here")),
    Case("prepared-global", workflow(mutate="console.log(__prepared__); // here")),
    Case(
        "module-level-helper",
        workflow(before="const peek = (t) => Topics.peek({ topic: t }); // here"),
    ),
    Case(
        "handler-without-ctx",
        "export default Keep.workflow({\n  name: 'w',\n  topics: { t: {} },\n  consumers: {\n"
        "    c: Keep.consumer({\n      subscribe: ['t'],\n"
        "      prepare: async (state) => ({ reservations: [], data: {} }), // here\n"
        "      mutate: async (prepared) => {}, // here\n"
        "      next: async (prepared, mutationResult) => null, // here\n"
        "    }),\n  },\n});\n",
    ),
]

VALID = [
    Case(
        "current-format",
        workflow(next_="await ctx.publish('out', { messageId: 'm', title: 't' });"),
    ),
    Case(
        "local-named-topics", workflow(next_="const Topics = ['a'];\nreturn { n: Topics.length };")
    ),
    Case("workflow-const-not-object", workflow(before="const workflow = 'name';")),
    Case("text-mentions", workflow(next_="console.log('Topics.peek and Gmail.api are gone');")),
    Case("property-names", workflow(next_="return { Gmail: 1, user: prepared.User };")),
]


@pytest.mark.parametrize("case", INVALID, ids=lambda c: c.id)
def test_reports(case: Case) -> None:
    assert_reports(RULE, case)


@pytest.mark.parametrize("case", VALID, ids=lambda c: c.id)
def test_silent(case: Case) -> None:
    assert_silent(RULE, case)


def test_messages_name_the_replacement() -> None:
    messages = [d.message for d in INVALID[0].report().diagnostics if d.rule == RULE]
    assert any("ctx.peek(topic, { limit })" in m for m in messages)
    assert any("ctx.sheets" in m for m in messages)
    assert any("export default Keep.workflow" in m for m in messages)
