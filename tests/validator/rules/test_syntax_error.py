import pytest

from keep_sdk import validate
from tests.validator.cases import Case, assert_reports, assert_silent, workflow

RULE = "syntax-error"

INVALID = [
    Case("unclosed-call", workflow(next_="console.log('x'; // here")),
    Case("missing-operand", workflow(next_="const x = ; // here")),
    Case("duplicate-let", workflow(next_="let a = 1;\nlet a = 2; // here")),
    Case("duplicate-const-and-param", workflow(next_="const prepared = 1; // here")),
    Case("break-outside-loop", workflow(next_="break; // here")),
    Case("octal-literal", workflow(next_="const mode = 0755; // here")),
    Case("duplicate-export-default", "export default 1;\nexport default 2; // here\n"),
    Case("bad-regex-flags", workflow(next_="const r = /a/gg; // here")),
    Case("await-in-plain-function", workflow(before="function f() {\n  await g(); // here\n}")),
]

VALID = [
    Case(
        "modern-syntax",
        workflow(
            next_="const a = prepared?.data ?? {};\nconst { x = 1, ...rest } = a;\nconst b = [...(a.list ?? [])];\nreturn { x, rest, b, n: 1_000 };"
        ),
    ),
    Case(
        "async-arrows-and-classes",
        workflow(
            before="class Box {\n  #v = 1;\n  get v() { return this.#v; }\n}",
            next_="const f = async (x) => x;\nreturn { v: new Box().v, y: await f(2) };",
        ),
    ),
    Case(
        "labels-and-loops",
        workflow(
            next_="outer: for (const a of [1]) {\n  for (const b of [2]) {\n    if (b) continue outer;\n  }\n}"
        ),
    ),
    Case(
        "regex-and-template",
        workflow(next_="const r = /a+b/giu;\nreturn { t: `x ${r.source} y`.replace(r, '') };"),
    ),
    Case(
        "top-level-await-free-helpers",
        workflow(before="const double = (x) => x * 2;\nfunction* gen() {\n  yield 1;\n}"),
    ),
]


@pytest.mark.parametrize("case", INVALID, ids=lambda c: c.id)
def test_reports(case: Case) -> None:
    assert_reports(RULE, case)


@pytest.mark.parametrize("case", VALID, ids=lambda c: c.id)
def test_silent(case: Case) -> None:
    assert_silent(RULE, case)


def test_every_parser_error_is_reported_with_its_range() -> None:
    source = "const a = ;\nconst b = ;\n"
    report = Case("two", source).report()
    lines = sorted(d.line for d in report.diagnostics if d.rule == RULE)
    assert lines == [1, 2]
    assert all(d.end_column > d.column for d in report.diagnostics)


FENCED_BODY = workflow(next_="console.log(`sent ${mutationResult}`);")


@pytest.mark.parametrize(
    ("before", "after"),
    [
        ("```js\n", "```\n"),
        ("```javascript\n", "```"),
        ("Here is the fixed script:\n\n```js\n", "```\n\nIt now sends one email.\n"),
        ("```\n", "```\n"),
        ("  ```typescript\n", "  ```\n"),
    ],
)
def test_a_pasted_markdown_fence_is_reported_at_the_fence_lines_only(
    before: str, after: str
) -> None:
    source = before + FENCED_BODY + after
    lines = source.split("\n")
    fence_lines = [n for n, line in enumerate(lines, start=1) if line.strip().startswith("```")]
    report = validate(source, filename="fenced.js")
    assert [d.line for d in report.diagnostics] == fence_lines
    for diagnostic, line in zip(report.diagnostics, fence_lines, strict=True):
        assert diagnostic.rule == RULE
        assert diagnostic.message.startswith("this line is a Markdown code fence")
        assert diagnostic.message.endswith(lines[line - 1].strip())
        assert diagnostic.column == len(lines[line - 1]) - len(lines[line - 1].lstrip()) + 1
        assert "fence" in (diagnostic.hint or "")
    unfenced = validate(FENCED_BODY)
    assert unfenced.ok


@pytest.mark.parametrize(
    "source",
    [
        "// ```js\n" + FENCED_BODY,
        "/*\n```js\nexample\n```\n*/\n" + FENCED_BODY,
        FENCED_BODY.replace("console.log(", "console.log('```', "),
    ],
    ids=["line-comment", "block-comment", "in-a-string"],
)
def test_fences_in_comments_and_strings_are_not_reported(source: str) -> None:
    assert [d.rule for d in validate(source).diagnostics] == []
