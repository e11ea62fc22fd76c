"""Property tests: `validate` returns a report for any nesting, any text and any bytes.

A construct nested too deeply for the engine to compile is a ``syntax-error``;
one the engine compiles but the walk does not descend into is one
``analysis-limit`` diagnostic. Nothing reaches Python's recursion limit.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from keep_sdk import validate
from keep_sdk.cli import cli
from keep_sdk.validator.walk.limits import MAX_NESTING
from tests.validator.test_robustness import assert_well_formed

EXPRESSIONS = {
    "parenthesized": ("(", "x", ")"),
    "array": ("[", "1", "]"),
    "object": ("{a: ", "1", "}"),
    "call-argument": ("f(", "1", ")"),
    "arrow": ("() => ", "1", ""),
    "async-arrow": ("async () => ", "1", ""),
    "function": ("function () { return ", "1", "; }"),
    "class": ("class { m() { return ", "1", "; } }"),
    "unary": ("-", "1", ""),
    "not": ("!", "1", ""),
    "typeof": ("typeof ", "x", ""),
    "await": ("await ", "1", ""),
    "new": ("new ", "X", ""),
    "spread": ("[...", "x", "]"),
    "binary-right": ("1 + (", "1", ")"),
    "binary-left": ("", "1", " + 1"),
    "logical": ("", "a", " && b"),
    "nullish": ("", "a", " ?? b"),
    "conditional": ("a ? b : ", "1", ""),
    "conditional-middle": ("a ? (", "1", ") : c"),
    "assignment": ("a = ", "1", ""),
    "sequence": ("", "1", ", 1"),
    "member": ("", "x", ".a"),
    "optional-member": ("", "x", "?.a"),
    "subscript": ("", "x", "[0]"),
    "call-chain": ("", "x", "()"),
    "template": ("`${", "1", "}`"),
}
STATEMENTS = {
    "block": ("{ ", "x;", " }"),
    "if": ("if (a) ", "x;", ""),
    "else": ("if (a) {} else ", "x;", ""),
    "else-if": ("if (a) {} else ", "if (a) {}", ""),
    "while": ("while (a) ", "x;", ""),
    "do-while": ("do ", "x;", " while (a);"),
    "for": ("for (;;) ", "x;", ""),
    "for-of": ("for (const q of a) ", "x;", ""),
    "for-in": ("for (const q in a) ", "x;", ""),
    "try": ("try { ", "x;", " } catch (e) {}"),
    "catch": ("try {} catch (e) { ", "x;", " }"),
    "finally": ("try {} finally { ", "x;", " }"),
    "labeled": ("L: ", "x;", ""),
    "switch": ("switch (a) { case 1: ", "x;", " }"),
    "function-declaration": ("function g() { ", "x;", " }"),
    "sequence-of-statements": ("", "x;", "\n"),
}
WHERE = ("handler", "module")
SETTINGS = settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
DEPTHS = st.one_of(st.integers(1, 2 * MAX_NESTING), st.integers(1, 100_000), st.just(100_000))


NAMES = "const a = 1, b = 2, c = 3, x = [], f = () => x, X = class {};\n"


def workflow(body: str) -> str:
    return (
        NAMES + "export default Keep.workflow({ name: 'w', topics: {}, producers: {\n"
        "  p: async (ctx, state) => {\n" + body + "\n    return state;\n  },\n} });\n"
    )


def nested(kind: str, depth: int, where: str) -> str:
    if kind in EXPRESSIONS:
        opener, middle, closer = EXPRESSIONS[kind]
        body = "const y = " + opener * depth + middle + closer * depth + ";"
    else:
        opener, middle, closer = STATEMENTS[kind]
        body = opener * depth + middle + closer * depth
    return workflow(body) if where == "handler" else body + "\n" + workflow("")


@pytest.mark.slow
@pytest.mark.parametrize("kind", [*EXPRESSIONS, *STATEMENTS])
def test_every_kind_nested_100000_deep_in_a_handler(kind: str) -> None:
    source = nested(kind, 100_000, "handler")
    assert_well_formed(validate(source), source)


@SETTINGS
@given(st.sampled_from([*EXPRESSIONS, *STATEMENTS]), DEPTHS, st.sampled_from(WHERE))
def test_any_nesting_gives_a_report(kind: str, depth: int, where: str) -> None:
    source = nested(kind, depth, where)
    assert_well_formed(validate(source), source)


@pytest.mark.parametrize("kind", ["not", "binary-left", "call-chain", "subscript", "logical"])
def test_too_deep_for_the_walk_is_one_analysis_limit(kind: str) -> None:
    report = validate(nested(kind, 5 * MAX_NESTING, "handler"))
    assert [d.rule for d in report.diagnostics] == ["analysis-limit"]
    assert f"more than {MAX_NESTING} expressions and statements deep" in report.errors[0].message


def test_shallow_nesting_is_walked() -> None:
    report = validate(nested("not", 20, "handler"))
    assert not report.diagnostics


PLACES = {
    "topic-value": "export default Keep.workflow({{ name: 'w', topics: {{ t: {obj} }}, "
    "producers: {{ p: async (ctx, s) => s }} }});",
    "schedule": "export default Keep.workflow({{ name: 'w', topics: {{}}, producers: {{ p: "
    "{{ schedule: {obj}, handler: async (ctx, s) => s }} }} }});",
    "subscribe": "export default Keep.workflow({{ name: 'w', topics: {{ t: {{}} }}, consumers: "
    "{{ c: {{ subscribe: {arr}, prepare: async () => ({{}}), mutate: async () => {{}}, "
    "next: async () => {{}} }} }} }});",
    "publish-payload": "export default Keep.workflow({{ name: 'w', topics: {{ t: {{}} }}, "
    "producers: {{ p: async (ctx, s) => {{ await ctx.publish('t', {{ messageId: 'x', "
    "title: 'y', payload: {obj} }}); }} }} }});",
    "operation-argument": "export default Keep.workflow({{ name: 'w', topics: {{}}, producers: "
    "{{ p: async (ctx, s) => {{ await ctx.gmail.search({{ query: {par} }}); }} }} }});",
    "prepare-result": "export default Keep.workflow({{ name: 'w', topics: {{ t: {{}} }}, "
    "consumers: {{ c: {{ subscribe: ['t'], prepare: async () => ({{ reservations: {arr}, "
    "data: {obj} }}), mutate: async () => {{}}, next: async () => {{}} }} }} }});",
    "default-export": "export default {open}Keep.workflow({{ name: 'w', topics: {{}}, "
    "producers: {{ p: async (ctx, s) => s }} }}){close};",
    "legacy-declaration": "const workflow = {obj};",
}


@SETTINGS
@given(st.sampled_from(sorted(PLACES)), DEPTHS)
def test_nesting_inside_the_declaration_gives_a_report(place: str, depth: int) -> None:
    source = PLACES[place].format(
        obj="{a: " * depth + "1" + "}" * depth,
        arr="[" * depth + "1" + "]" * depth,
        par="(" * depth + "1" + ")" * depth,
        open="(" * depth,
        close=")" * depth,
    )
    report = validate(source)
    assert_well_formed(report, source)
    if "syntax-error" in report.rules():
        assert report.rules() == {"syntax-error"}


SURROGATES = st.characters(min_codepoint=0xD800, max_codepoint=0xDFFF)


@SETTINGS
@given(st.lists(st.one_of(st.text(max_size=20), SURROGATES), max_size=20))
def test_lone_surrogates_give_a_report(parts: list[str]) -> None:
    source = "".join(parts)
    assert_well_formed(validate(source), source)


@SETTINGS
@given(st.text(max_size=40), SURROGATES, st.sampled_from(["handler", "string", "comment"]))
def test_lone_surrogate_inside_a_workflow(text: str, surrogate: str, where: str) -> None:
    if where == "handler":
        source = workflow(f"const v = {text!r}; {surrogate}")
    elif where == "string":
        source = workflow(f"const v = '{surrogate}';")
    else:
        source = workflow(f"// {surrogate}")
    report = validate(source)
    assert_well_formed(report, source)
    assert any(d.rule == "syntax-error" for d in report.diagnostics)


@SETTINGS
@given(st.binary(max_size=300))
def test_any_bytes_give_a_report(data: bytes) -> None:
    for source in (data.decode("utf-8", "surrogateescape"), data.decode("latin-1")):
        assert_well_formed(validate(source), source)


def keep_json(path: Path) -> tuple[int, object]:
    result = CliRunner().invoke(cli, ["validate", "--format", "json", str(path)])
    return result.exit_code, json.loads(result.stdout)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.one_of(
        st.binary(max_size=300),
        st.builds(
            lambda kind, depth: nested(kind, depth, "handler").encode(),
            st.sampled_from([*EXPRESSIONS, *STATEMENTS]),
            st.integers(1, 3000),
        ),
    )
)
def test_cli_json_is_always_valid_json(
    tmp_path_factory: pytest.TempPathFactory, data: bytes
) -> None:
    path = tmp_path_factory.mktemp("cli") / "script.js"
    path.write_bytes(data)
    code, document = keep_json(path)
    assert code in (0, 1)
    assert isinstance(document, dict)
    [report] = document["reports"]
    assert report["file"] == str(path)


def test_cli_json_reports_a_file_that_is_not_utf8(tmp_path: Path) -> None:
    path = tmp_path / "latin1.js"
    path.write_bytes(b"const caf\xe9 = 1;\n")
    code, document = keep_json(path)
    assert code == 1
    assert isinstance(document, dict)
    [diagnostic] = document["reports"][0]["diagnostics"]
    assert diagnostic["rule"] == "syntax-error"
