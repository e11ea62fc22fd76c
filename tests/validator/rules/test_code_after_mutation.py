import pytest

from tests.validator.cases import Case, assert_reports, assert_silent, workflow

RULE = "code-after-mutation"

SEND = 'await ctx.gmail.send({ to: "a@example.com", subject: "s", body: "b" });'

INVALID = [
    Case("statement-after", workflow(mutate=f"{SEND}\nconsole.log('sent'); // here")),
    Case(
        "after-if-branch",
        workflow(mutate=f"if (prepared.data.go) {{\n{SEND}\n}}\nconst x = 1; // here"),
    ),
    Case(
        "after-switch",
        workflow(
            mutate=(
                "switch (prepared.data.kind) {\n"
                f"  case 'a':\n    {SEND}\n    break;\n"
                "}\n"
                "prepared.data.done = true; // here"
            )
        ),
    ),
    Case(
        "then-callback",
        workflow(
            mutate=(
                'await ctx.slack.postMessage({ channel: "#c", text: "t" })\n'
                "  .then(() => console.log('posted')); // here"
            )
        ),
    ),
    Case(
        "after-helper",
        workflow(
            before=(
                "async function send(ctx) {\n"
                '  await ctx.gmail.send({ to: "a", subject: "s", body: "b" });\n'
                "}"
            ),
            mutate="await send(ctx);\nreturn { ok: true }; // here",
        ),
    ),
    Case(
        "alias-then-return-data",
        workflow(
            mutate=(
                "const { sheets } = ctx;\n"
                'await sheets.appendRow({ spreadsheetId: "s", values: [] });\n'
                "return prepared.data; // here"
            )
        ),
    ),
    Case(
        "after-loop-with-mutation",
        workflow(
            mutate=(
                "for (const id of prepared.data.ids) {\n"
                "  if (id) {\n"
                f"    {SEND}\n"
                "    break;\n"
                "  }\n"
                "}\n"
                "console.log('loop done'); // here"
            )
        ),
    ),
    Case(
        "comma-after-mutation",
        workflow(
            mutate=(
                'await (ctx.gmail.send({ to: "a", subject: "s", body: "b" }),\n'
                "  console.log('sent')); // here"
            )
        ),
    ),
    Case(
        "promise-all-then",
        workflow(
            mutate=(
                'await Promise.all([ctx.gmail.send({ to: "a", subject: "s", body: "b" })])\n'
                "  .then(() => console.log('sent')); // here"
            )
        ),
    ),
    Case(
        "promise-resolve-then-mutation-then-more",
        workflow(
            mutate=(
                "await Promise.resolve()\n"
                '  .then(() => ctx.gmail.send({ to: "a", subject: "s", body: "b" }))\n'
                "  .then(() => console.log('sent')); // here"
            )
        ),
    ),
]

VALID = [
    Case("last-statement", workflow(mutate=f"const to = prepared.data.to;\n{SEND}")),
    Case(
        "return-await",
        workflow(mutate='return await ctx.gmail.send({ to: "a", subject: "s", body: "b" });'),
    ),
    Case(
        "bare-return-and-break",
        workflow(
            mutate=(
                "switch (prepared.data.kind) {\n"
                f"  case 'a':\n    {SEND}\n    break;\n"
                "  case 'b':\n    return;\n"
                "}"
            )
        ),
    ),
    Case(
        "early-return-before",
        workflow(
            mutate=f"if (!prepared.data.to) {{\n  console.log('nothing');\n  return;\n}}\n{SEND}"
        ),
    ),
    Case(
        "branches-each-terminal",
        workflow(
            mutate=(
                f"if (prepared.data.a) {{\n  {SEND}\n}} else {{\n"
                '  await ctx.slack.postMessage({ channel: "#c", text: "t" });\n}'
            )
        ),
    ),
    Case(
        "strings-and-comments",
        workflow(
            mutate=(
                "// await ctx.gmail.send({}); console.log('after');\n"
                "const note = 'await ctx.gmail.send({}); more();';\n"
                f"{SEND}"
            )
        ),
    ),
    Case("code-after-in-next-is-fine", workflow(next_="console.log('a');\nconsole.log('b');")),
    Case(
        "comma-before-mutation",
        workflow(
            mutate='await (console.log("x"), ctx.gmail.send({ to: "a", subject: "s", body: "b" }));'
        ),
    ),
]


@pytest.mark.parametrize("case", INVALID, ids=lambda c: c.id)
def test_reports(case: Case) -> None:
    assert_reports(RULE, case)


@pytest.mark.parametrize("case", VALID, ids=lambda c: c.id)
def test_silent(case: Case) -> None:
    assert_silent(RULE, case)
