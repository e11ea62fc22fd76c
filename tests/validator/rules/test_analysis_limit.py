import pytest

from tests.validator.cases import Case, assert_reports, assert_silent, workflow

RULE = "analysis-limit"

SEND = 'ctx.gmail.send({ to: "a", subject: "s", body: "b" })'
POST = 'ctx.slack.postMessage({ channel: "#c", text: "t" })'


def chain(depth: int, last: str, *, mark: int | None = None, arrow: bool = False) -> str:
    """Helpers ``h1`` … ``h<depth>``, each calling the next; the last one runs `last`.

    The call made by helper `mark` carries the ``// here`` mark.
    """
    lines = []
    for index in range(1, depth):
        here = " // here" if index == mark else ""
        if arrow:
            lines.append(f"const h{index} = async (ctx) => h{index + 1}(ctx);{here}")
        else:
            lines.append(f"async function h{index}(ctx) {{\n  await h{index + 1}(ctx);{here}\n}}")
    lines.append(f"async function h{depth}(ctx) {{\n{last}\n}}")
    return "\n".join(lines)


def nested_functions(depth: int, inner: str) -> str:
    """`depth` arrow functions, each returning the next; the innermost evaluates `inner`."""
    body = inner
    for _ in range(depth):
        body = f"() => {body}"
    return body


def fan_out(fan: int, depth: int, *, mark: bool = False) -> str:
    """Pure helpers ``w0`` … ``w<depth>`` on one line, each calling the next `fan` times."""
    functions = []
    for index in range(depth):
        calls = " ".join(f"w{index + 1}(x);" for _ in range(fan))
        functions.append(f"function w{index}(x) {{ {calls} }}")
    functions.append(f"function w{depth}(x) {{ return x + 1; }}")
    return " ".join(functions) + (" // here" if mark else "")


TWO_MUTATIONS = f"  await {SEND};\n  await {POST};"

INVALID = [
    Case(
        "thirteen-helpers",
        workflow(before=chain(14, TWO_MUTATIONS, mark=12), mutate="await h1(ctx);"),
    ),
    Case(
        "forty-helpers", workflow(before=chain(40, TWO_MUTATIONS, mark=12), mutate="await h1(ctx);")
    ),
    Case(
        "arrow-helpers",
        workflow(before=chain(20, TWO_MUTATIONS, mark=12, arrow=True), mutate="await h1(ctx);"),
    ),
    Case(
        "deep-in-prepare",
        workflow(
            before=chain(16, "  await ctx.gmail.send({});", mark=12),
            prepare="await h1(ctx);\nreturn { reservations: [], data: {} };",
        ),
    ),
    Case(
        "step-budget",
        workflow(
            before=fan_out(4, 8, mark=True) + f"\nasync function two(ctx) {{\n{TWO_MUTATIONS}\n}}",
            mutate="w0(prepared.data.x);\nawait two(ctx);",
        ),
    ),
    Case(
        "nested-functions",
        workflow(
            mutate="const later = " + nested_functions(52, "ctx[prepared.data.name]") + "; // here"
        ),
    ),
    Case(
        "recursive-mutation",
        workflow(
            before=(
                "async function sendAll(ctx, xs) {\n"
                "  if (xs.length > 1) await sendAll(ctx, xs.slice(1)); // here\n"
                f"  await {SEND};\n"
                "}"
            ),
            mutate="await sendAll(ctx, prepared.data.xs);",
        ),
    ),
    Case(
        "deep-in-producer",
        workflow(
            before=chain(14, "  await ctx.gmail.search({});", mark=12),
            producer="await h1(ctx);\nreturn state;",
        ),
    ),
]

VALID = [
    Case("twelve-helpers", workflow(before=chain(12, f"  await {SEND};"), mutate="await h1(ctx);")),
    Case("no-helpers", workflow(mutate=f"await {SEND};")),
    Case("wide-not-deep", workflow(before=fan_out(3, 6), mutate=f"w0(1);\nawait {SEND};")),
    Case(
        "nested-functions-within-bound",
        workflow(mutate="const later = " + nested_functions(40, "1") + ";\nreturn 1;"),
    ),
    Case(
        "recursive-helper",
        workflow(
            before="function total(xs) {\n  return xs.length ? xs[0] + total(xs.slice(1)) : 0;\n}",
            mutate=f"const n = total(prepared.data.xs);\nawait {SEND};",
        ),
    ),
]


@pytest.mark.parametrize("case", INVALID, ids=lambda c: c.id)
def test_reports(case: Case) -> None:
    assert_reports(RULE, case)


@pytest.mark.parametrize("case", VALID, ids=lambda c: c.id)
def test_silent(case: Case) -> None:
    assert_silent(RULE, case)
