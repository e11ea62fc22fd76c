import pytest

from tests.validator.cases import Case, assert_reports, assert_silent, workflow

RULE = "multiple-mutations"

SEND = 'ctx.gmail.send({ to: "a", subject: "s", body: "b" })'
POST = 'ctx.slack.postMessage({ channel: "#c", text: "t" })'

INVALID = [
    Case("two-in-sequence", workflow(mutate=f"await {SEND};\nawait {POST}; // here")),
    Case(
        "loop",
        workflow(mutate=f"for (const x of prepared.data.xs) {{\n  await {SEND}; // here\n}}"),
    ),
    Case(
        "while-loop",
        workflow(mutate=f"let i = 0;\nwhile (i < 3) {{\n  await {POST}; // here\n  i++;\n}}"),
    ),
    Case("promise-all", workflow(mutate=f"await Promise.all([\n  {SEND},\n  {POST}, // here\n]);")),
    Case(
        "map-callback",
        workflow(
            mutate="await Promise.all(prepared.data.xs.map((x) => ctx.slack.postMessage({ channel: x, text: 't' }))); // here"
        ),
    ),
    Case(
        "forEach-alias",
        workflow(
            mutate="const post = ctx.slack.postMessage;\nprepared.data.xs.forEach(async (x) => { await post({ channel: x, text: 't' }); }); // here"
        ),
    ),
    Case(
        "helper-twice",
        workflow(
            before="async function notify(ctx, text) {\n  await ctx.slack.postMessage({ channel: '#c', text });\n}",
            mutate="await notify(ctx, 'a');\nawait notify(ctx, 'b'); // here",
        ),
    ),
    Case(
        "retry-helper",
        workflow(
            before="async function withRetry(fn) {\n  for (let i = 0; i < 3; i++) {\n    try {\n      return await fn();\n    } catch (e) {}\n  }\n}",
            mutate=f"await withRetry(() => {SEND}); // here",
        ),
    ),
    Case(
        "if-then-unconditional",
        workflow(mutate=f"if (prepared.data.a) {{\n  await {SEND};\n}}\nawait {POST}; // here"),
    ),
]

VALID = [
    Case("one", workflow(mutate=f"await {SEND};")),
    Case(
        "if-else",
        workflow(
            mutate=f"if (prepared.data.a) {{\n  await {SEND};\n}} else {{\n  await {POST};\n}}"
        ),
    ),
    Case(
        "loop-break-after",
        workflow(
            mutate=f"for (const x of prepared.data.xs) {{\n  if (x.ok) {{\n    await {SEND};\n    break;\n  }}\n}}"
        ),
    ),
    Case(
        "switch",
        workflow(
            mutate=f"switch (prepared.data.k) {{\n  case 1:\n    await {SEND};\n    break;\n  default:\n    await {POST};\n}}"
        ),
    ),
    Case(
        "early-return",
        workflow(mutate=f"if (prepared.data.a) {{\n  return await {SEND};\n}}\nawait {POST};"),
    ),
    Case(
        "reads-in-prepare-loop",
        workflow(
            prepare="for (const id of [1, 2]) {\n  await ctx.sheets.getRow({ spreadsheetId: 's', rowId: String(id) });\n}\nreturn { reservations: [], data: {} };"
        ),
    ),
    Case(
        "single-mutation-in-promise-resolve-then",
        workflow(
            mutate=(
                "await Promise.resolve().then(() =>\n"
                '  ctx.gmail.send({ to: "a", subject: "s", body: "b" }));'
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
