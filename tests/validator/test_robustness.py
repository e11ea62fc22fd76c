"""Property tests: any input gives a valid report; renaming identifiers changes nothing."""

from __future__ import annotations

from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from keep_sdk import validate
from keep_sdk.validator import Report
from keep_sdk.validator.source import SourceText
from tests.validator.growing import HAZARDS

FIXTURES = sorted((Path(__file__).parents[2] / "fixtures" / "workflows").glob("*/*.js"))
SOURCES = [path.read_text() for path in FIXTURES]
SETTINGS = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def assert_well_formed(report: Report, source: str) -> None:
    assert Report.model_validate_json(report.model_dump_json()) == report
    line_count = source.count("\n") + 1
    for diagnostic in report.diagnostics:
        assert 1 <= diagnostic.line <= diagnostic.end_line <= line_count
        assert diagnostic.message
        assert diagnostic.hint
        if diagnostic.end_line == diagnostic.line:
            assert diagnostic.end_column > diagnostic.column


@SETTINGS
@given(st.text(max_size=400))
def test_random_text(source: str) -> None:
    assert_well_formed(validate(source), source)


@SETTINGS
@given(st.binary(max_size=400))
def test_binary_junk(data: bytes) -> None:
    source = data.decode("utf-8", "surrogateescape")
    assert_well_formed(validate(source), source)


@st.composite
def mutated(draw: st.DrawFn) -> str:
    source = draw(st.sampled_from(SOURCES))
    size = len(source)
    kind = draw(st.sampled_from(["truncate", "delete", "insert", "duplicate", "swap"]))
    at = draw(st.integers(0, size))
    if kind == "truncate":
        return source[:at]
    end = draw(st.integers(at, min(size, at + 80)))
    if kind == "delete":
        return source[:at] + source[end:]
    if kind == "insert":
        junk = draw(st.text(alphabet="{}()[];,.=>`'\"/*\\ \nax0$", max_size=12))
        return source[:at] + junk + source[at:]
    if kind == "duplicate":
        return source[:end] + source[at:end] + source[end:]
    other = draw(st.integers(0, size))
    first, second = sorted((at, other))
    return source[:first] + source[second:end] + source[first:second] + source[end:]


@SETTINGS
@given(mutated())
def test_mutated_fixtures(source: str) -> None:
    assert_well_formed(validate(source), source)


@settings(max_examples=8, deadline=None)
@given(st.integers(50, 3000), st.sampled_from(["(", "[", "{", "f(", "[{a:", "async () => ", "-"]))
def test_deeply_nested(depth: int, opener: str) -> None:
    closer = {"(": ")", "[": "]", "{": "}", "f(": ")", "[{a:": "}]", "async () => ": "", "-": ""}
    source = "const x = " + opener * depth + "1" + closer[opener] * depth + ";\n"
    assert_well_formed(validate(source), source)


def test_huge_script() -> None:
    body = SOURCES[0].split("export default", 1)[0]
    helpers = "".join(f"function helper{i}(x) {{ return x + {i}; }}\n" for i in range(4000))
    source = body + helpers + "export default" + SOURCES[0].split("export default", 1)[1]
    assert len(source) > 150_000
    assert_well_formed(validate(source), source)


DECLARING_PARENTS = {
    "variable_declarator",
    "function_declaration",
    "formal_parameters",
    "arrow_function",
    "catch_clause",
    "class_declaration",
    "assignment_pattern",
    "array_pattern",
    "pair_pattern",
    "rest_pattern",
}


def renameable(source: str) -> list[str]:
    """Names declared in the script that never appear as shorthand properties."""
    parsed = SourceText.parse(source)
    declared: set[str] = set()
    shorthand: set[str] = set()
    stack = [parsed.root]
    while stack:
        node = stack.pop()
        stack.extend(node.children)
        if node.type in ("shorthand_property_identifier", "shorthand_property_identifier_pattern"):
            shorthand.add(parsed.node_text(node))
        elif (
            node.type == "identifier"
            and node.parent is not None
            and node.parent.type in DECLARING_PARENTS
        ):
            declared.add(parsed.node_text(node))
    return sorted(declared - shorthand)


def rename(source: str, names: set[str], suffix: str) -> str:
    parsed = SourceText.parse(source)
    edits: list[tuple[int, int, str]] = []
    stack = [parsed.root]
    while stack:
        node = stack.pop()
        stack.extend(node.children)
        if node.type == "identifier" and parsed.node_text(node) in names:
            edits.append((node.start_byte, node.end_byte, parsed.node_text(node) + suffix))
    data = parsed.data
    for start, end, text in sorted(edits, reverse=True):
        data = data[:start] + text.encode() + data[end:]
    return data.decode()


def findings(source: str) -> set[tuple[str, int]]:
    return {(d.rule, d.line) for d in validate(source).diagnostics}


@settings(max_examples=30, deadline=None)
@given(st.data())
def test_renaming_identifiers_changes_no_finding(data: st.DataObject) -> None:
    source = data.draw(st.sampled_from(SOURCES))
    names = renameable(source)
    chosen = set(data.draw(st.lists(st.sampled_from(names), unique=True))) if names else set()
    suffix = data.draw(st.sampled_from(["_1", "Renamed", "$", "_x9"]))
    renamed = rename(source, chosen, suffix)
    assert findings(renamed) == findings(source)


def test_renaming_ctx_is_covered() -> None:
    assert any("ctx" in renameable(source) for source in SOURCES)
    source = next(s for s in SOURCES if "code-after-mutation" in s)
    assert findings(rename(source, {"ctx"}, "_1")) == findings(source)


def test_template_escape_before_a_lone_surrogate_and_nul() -> None:
    source = "`\\\udcc8\x00`"
    report = validate(source)
    assert_well_formed(report, source)
    assert [(d.rule, d.line, d.column) for d in report.diagnostics] == [("syntax-error", 1, 4)]


@st.composite
def hazardous(draw: st.DrawFn) -> str:
    """A fixture script with hazards (lone surrogates, NUL, template escapes, deep nesting,
    long chains, random unicode) inserted at random places."""
    source = draw(st.sampled_from(SOURCES))
    pieces = draw(
        st.lists(st.one_of(st.sampled_from(HAZARDS), st.text(max_size=6)), min_size=1, max_size=5)
    )
    for piece in pieces:
        at = draw(st.integers(0, len(source)))
        source = source[:at] + piece + source[at:]
    return source


@SETTINGS
@given(hazardous())
def test_hazards_mixed_into_valid_scripts_give_a_report(source: str) -> None:
    report = validate(source)
    assert_well_formed(report, source)
    lines = source.split("\n")
    for diagnostic in report.diagnostics:
        assert diagnostic.column <= len(lines[diagnostic.line - 1]) + 1


@SETTINGS
@given(
    st.lists(
        st.one_of(st.sampled_from(HAZARDS[:14]), st.text(max_size=8), st.just("f(`a${b}`);\n")),
        max_size=30,
    )
)
def test_node_offsets_are_code_points_of_the_text(parts: list[str]) -> None:
    """Every node's byte range maps to the code points of its text, and its position to the
    line and column counted in the Python string (unpaired surrogates read as U+FFFD)."""
    text = "".join(parts)
    parsed = SourceText.parse(text)
    shown = "".join("\ufffd" if 0xD800 <= ord(c) <= 0xDFFF else c for c in text)
    stack = [parsed.root]
    while stack:
        node = stack.pop()
        stack.extend(node.children)
        start, end = parsed.char_offset(node.start_byte), parsed.char_offset(node.end_byte)
        assert shown[start:end] == parsed.node_text(node)
        line, column = parsed.position(node.start_byte)
        before = text[:start]
        assert (line, column) == (before.count("\n") + 1, start - (before.rfind("\n") + 1) + 1)
