import pytest

from tests.validator.cases import Case, assert_reports, assert_silent, workflow

RULE = "mutation-in-try"

POST = 'ctx.slack.postMessage({ channel: "#c", text: "t" })'

INVALID = [
    Case("try", workflow(mutate=f"try {{\n  await {POST}; // here\n}} catch (e) {{}}")),
    Case(
        "catch",
        workflow(
            mutate=f"try {{\n  JSON.parse(prepared.data.x);\n}} catch (e) {{\n  await {POST}; // here\n}}"
        ),
    ),
    Case(
        "finally",
        workflow(
            mutate=f"try {{\n  JSON.parse(prepared.data.x);\n}} finally {{\n  await {POST}; // here\n}}"
        ),
    ),
    Case("dot-catch", workflow(mutate=f"await {POST}.catch(() => null); // here")),
    Case("then-rejection", workflow(mutate=f"await {POST}.then(undefined, () => null); // here")),
    Case(
        "helper-in-try",
        workflow(
            before="async function post(ctx) {\n  await ctx.slack.postMessage({ channel: '#c', text: 't' });\n}",
            mutate="try {\n  await post(ctx); // here\n} catch (e) {}",
        ),
    ),
    Case(
        "nested-block",
        workflow(
            mutate=f"try {{\n  if (prepared.data.a) {{\n    await {POST}; // here\n  }}\n}} catch {{}}"
        ),
    ),
]

VALID = [
    Case("plain", workflow(mutate=f"await {POST};")),
    Case(
        "try-before",
        workflow(
            mutate=f"let text;\ntry {{\n  text = JSON.parse(prepared.data.raw);\n}} catch (e) {{\n  text = 'x';\n}}\nawait {POST};"
        ),
    ),
    Case(
        "try-in-prepare-read",
        workflow(
            prepare="try {\n  await ctx.sheets.listRows({ spreadsheetId: 's' });\n} catch (e) {}\nreturn { reservations: [], data: {} };"
        ),
    ),
    Case(
        "string-mentions-catch",
        workflow(mutate=f"const s = 'try {{ }} catch (e) {{ }}';\nawait {POST};"),
    ),
    Case(
        "catch-on-read-in-producer",
        workflow(producer="const r = await ctx.gmail.search({}).catch(() => []);\nreturn state;"),
    ),
]


@pytest.mark.parametrize("case", INVALID, ids=lambda c: c.id)
def test_reports(case: Case) -> None:
    assert_reports(RULE, case)


@pytest.mark.parametrize("case", VALID, ids=lambda c: c.id)
def test_silent(case: Case) -> None:
    assert_silent(RULE, case)
