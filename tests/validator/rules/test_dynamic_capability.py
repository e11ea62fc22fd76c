import pytest

from tests.validator.cases import Case, assert_reports, assert_silent, workflow

RULE = "dynamic-capability"

INVALID = [
    Case(
        "computed-connector",
        workflow(
            prepare="const name = 'gmail';\nawait ctx[name].search({}); // here\nreturn { reservations: [], data: {} };"
        ),
    ),
    Case(
        "computed-operation",
        workflow(
            prepare="const op = prepared;\nawait ctx.gmail[op]({}); // here\nreturn { reservations: [], data: {} };"
        ),
    ),
    Case(
        "passed-to-unknown",
        workflow(
            prepare="const run = state.fn;\nawait run(ctx); // here\nreturn { reservations: [], data: {} };"
        ),
    ),
    Case(
        "stored-in-object",
        workflow(
            prepare="const bag = { c: ctx.sheets }; // here\nreturn { reservations: [], data: {} };"
        ),
    ),
    Case(
        "spread",
        workflow(
            prepare="const copy = { ...ctx }; // here\nreturn { reservations: [], data: {} };"
        ),
    ),
    Case(
        "rest",
        workflow(
            prepare="const { gmail, ...others } = ctx; // here\nreturn { reservations: [], data: {} };"
        ),
    ),
    Case("reassign-member", workflow(mutate="ctx.gmail = {}; // here")),
    Case("reassign-alias", workflow(mutate="let s = ctx.slack;\ns = null; // here")),
    Case(
        "object-keys",
        workflow(prepare="Object.keys(ctx); // here\nreturn { reservations: [], data: {} };"),
    ),
    Case(
        "let-helper-reassigned",
        workflow(
            before="let read = async (c) => c.gmail.search({});\nread = async (c) => c;",
            prepare="await read(ctx); // here\nreturn { reservations: [], data: {} };",
        ),
    ),
    Case(
        "let-helper-passed-around",
        workflow(
            before="let read = async (c) => c.gmail.search({});\nconst table = { read };",
            prepare="await read(ctx); // here\nreturn { reservations: [], data: {} };",
        ),
    ),
    Case(
        "let-helper-reassigned-through-an-escaped-name",
        workflow(
            before=(
                "let read = async (c) => c.gmail.search({});\n"
                "function swap() {\n  re\\u0061d = async (c) => c;\n}"
            ),
            prepare="await read(ctx); // here\nreturn { reservations: [], data: {} };",
        ),
    ),
    Case(
        "var-helper-shadowed-by-parameter",
        workflow(
            before=(
                "var read = async (c) => c.gmail.search({});\n"
                "function wrap(read) {\n  return read;\n}"
            ),
            prepare="await read(ctx); // here\nreturn { reservations: [], data: {} };",
        ),
    ),
    Case(
        "getter-returning-connector",
        workflow(
            mutate=(
                "const c = {\n  get mail() { // here\n    return ctx.gmail;\n  },\n};\n"
                "await c.mail.send({ to: 'a' });"
            )
        ),
    ),
    Case(
        "function-in-object-returning-connector",
        workflow(mutate="const c = { mail: () => ctx.gmail }; // here\nawait c.mail().send({});"),
    ),
]

VALID = [
    Case(
        "helper-followed",
        workflow(
            before="async function read(c) {\n  return c.gmail.search({});\n}",
            prepare="await read(ctx);\nreturn { reservations: [], data: {} };",
        ),
    ),
    Case(
        "destructuring",
        workflow(
            prepare="const { gmail } = ctx;\nawait gmail.search({});\nreturn { reservations: [], data: {} };"
        ),
    ),
    Case(
        "literal-computed",
        workflow(
            prepare="await ctx['gmail']['search']({});\nreturn { reservations: [], data: {} };"
        ),
    ),
    Case("console-log-ctx", workflow(next_="console.log(ctx);")),
    Case(
        "let-helper-only-called",
        workflow(
            before=(
                "// read is called, never assigned: `read = x` in this comment does not count\n"
                "let read = async (c) => c.gmail.search({ query: 'read' });"
            ),
            prepare="await read(ctx);\nreturn { reservations: [], data: {} };",
        ),
    ),
    Case(
        "var-function-expression-helper",
        workflow(
            before="var read = function (c) {\n  return c.gmail.search({});\n};",
            prepare="const found = await read(ctx);\nreturn { reservations: [], data: { found } };",
        ),
    ),
    Case(
        "computed-on-data",
        workflow(
            prepare="const k = 'a';\nconst v = state?.[k];\nreturn { reservations: [], data: { v } };"
        ),
    ),
    Case(
        "helper-returning-connector-is-followed",
        workflow(
            before="const mailer = (ctx) => ctx.gmail;",
            mutate="await mailer(ctx).send({ to: 'a', subject: 'b', body: 'c' });",
        ),
    ),
]


@pytest.mark.parametrize("case", INVALID, ids=lambda c: c.id)
def test_reports(case: Case) -> None:
    assert_reports(RULE, case)


@pytest.mark.parametrize("case", VALID, ids=lambda c: c.id)
def test_silent(case: Case) -> None:
    assert_silent(RULE, case)
