import pytest

from tests.validator.cases import Case, assert_reports, assert_silent, workflow

RULE = "undefined-name"

_TOTAL_ELSEWHERE = "function first() {\n  const total = 1;\n  return total;\n}"

INVALID = [
    Case(
        "read-in-a-template-of-a-plain-literal",
        workflow(
            before=_TOTAL_ELSEWHERE,
            next_='return { title: `it\'s "${total}" // not a comment` }; // here',
        ),
    ),
    Case(
        "read-in-a-conditional-of-a-plain-literal",
        workflow(
            before=_TOTAL_ELSEWHERE,
            next_="return { n: prepared?.data?.a ? total : 0 }; // here",
        ),
    ),
    Case(
        "shorthand-beside-optional-chaining",
        workflow(
            before=_TOTAL_ELSEWHERE, next_="return { a: prepared?.data ?? 1, total }; // here"
        ),
    ),
    Case(
        "read-after-a-string-with-quotes-and-slashes",
        workflow(
            before=_TOTAL_ELSEWHERE,
            next_="return { url: \"http://x/'y'\", /* 'total' */ n: total }; // here",
        ),
    ),
    Case("state-in-next", workflow(next_="return { n: (state?.n ?? 0) + 1 }; // here")),
    Case(
        "state-in-next-condition", workflow(next_="if (state?.done) { // here\n  return null;\n}")
    ),
    Case(
        "prepared-in-prepare",
        workflow(
            prepare="const id = prepared.data.id; // here\nreturn { reservations: [], data: {} };"
        ),
    ),
    Case(
        "mutation-result-in-mutate",
        workflow(mutate="console.log(mutationResult); // here"),
    ),
    Case(
        "local-of-another-helper",
        workflow(
            before="function first() {\n  const total = 1;\n  return total;\n}\nfunction second() {\n  return total;\n}",
            next_="return { n: second() }; // here",
        ),
    ),
    Case(
        "block-scoped-const-after-its-block",
        workflow(
            next_="if (prepared.data.ok) {\n  const label = 'ok';\n}\nconsole.log(label); // here"
        ),
    ),
    Case(
        "catch-parameter-outside-catch",
        workflow(
            next_="try {\n  JSON.parse('x');\n} catch (err) {}\nconsole.log(err.message); // here"
        ),
    ),
    Case(
        "state-in-producer-callback",
        workflow(
            producer="const items = [1].map((x) => x + prepared.data.n); // here\nreturn state;"
        ),
    ),
    Case(
        "inside-a-plain-data-literal",
        workflow(
            prepare=(
                "const events = await ctx.peek('in', { limit: 1 });\n"
                "for (const event of events) {\n  console.log(event.id);\n}\n"
                "return { reservations: [], data: { id: event.id, n: 1 } }; // here"
            )
        ),
    ),
    Case(
        "shorthand-in-a-plain-array-of-objects",
        workflow(
            before="function pick(items) {\n  const chosen = items[0];\n  return chosen;\n}",
            next_="const rows = [{ chosen }, 'x']; // here\nconsole.log(rows);",
        ),
    ),
]

VALID = [
    Case(
        "word-only-in-template-text-and-comments",
        workflow(
            before=_TOTAL_ELSEWHERE,
            next_="return { title: `total: ${prepared.data.n}`, /* total */ n: 1 };",
        ),
    ),
    Case(
        "parameters", workflow(next_="return { ok: prepared.data.ok, s: mutationResult.status };")
    ),
    Case("typeof-guard", workflow(next_="if (typeof state !== 'undefined') { return null; }")),
    Case("closure", workflow(next_="const n = 1;\nconst f = () => n + 1;\nreturn { n: f() };")),
    Case(
        "hoisted-function",
        workflow(next_="return { n: helper() };\nfunction helper() {\n  return 1;\n}"),
    ),
    Case("sandbox-globals", workflow(next_="return { t: JSON.stringify([Math.max(1, 2)]) };")),
    Case(
        "module-helper-declared-later",
        workflow(
            before="const twice = (x) => x * 2;", next_="return { n: twice(prepared.data.n) };"
        ),
    ),
    Case(
        "arguments-object",
        workflow(
            before="function count() {\n  return arguments.length;\n}",
            next_="return { n: count(1, 2) };",
        ),
    ),
    Case(
        "named-function-expression",
        workflow(
            next_="const f = function again(n) {\n  return n ? again(n - 1) : 0;\n};\nreturn { n: f(2) };"
        ),
    ),
    Case(
        "var-read-before-declaration",
        workflow(next_="console.log(total);\nvar total = 1;\nreturn { total };"),
    ),
    Case(
        "catch-parameter",
        workflow(
            next_="try {\n  JSON.parse('x');\n} catch (err) {\n  return { message: err.message };\n}"
        ),
    ),
    Case(
        "loop-variables",
        workflow(next_="for (const [k, v] of Object.entries({})) {\n  console.log(k, v);\n}"),
    ),
]


@pytest.mark.parametrize("case", INVALID, ids=lambda c: c.id)
def test_reports(case: Case) -> None:
    assert_reports(RULE, case)


@pytest.mark.parametrize("case", VALID, ids=lambda c: c.id)
def test_silent(case: Case) -> None:
    assert_silent(RULE, case)
