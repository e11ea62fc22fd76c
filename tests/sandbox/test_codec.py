"""The boundary codec on its own: raw engine text, host values, paths, units, truncation."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from keep_sdk.contract import codec
from keep_sdk.contract.codec import BoundaryError


def _decode(text: str, *, max_bytes: int = 1_000_000, max_depth: int = 16) -> Any:
    codec.scan(text, what="the value", max_bytes=max_bytes, max_depth=max_depth)
    value = codec.loads(text, what="the value")
    codec.check(value, root="payload", max_bytes=max_bytes, max_depth=max_depth)
    return value


@pytest.mark.parametrize(
    ("text", "rule", "path"),
    [
        ('{"a":1e999}', "number", "payload.a"),
        ('{"a":-1e999}', "number", "payload.a"),
        ('[0,{"b":NaN}]', "number", "payload[1].b"),
        ('{"x":Infinity}', "number", "payload.x"),
        ('{"n":9007199254740992}', "integer", "payload.n"),
        ('{"n":-9007199254740992}', "integer", "payload.n"),
        ('{"n":1e20}', "integer", "payload.n"),
        ('{"n":' + "9" * 100_000 + "}", "integer", "payload.n"),
        ('{"s":"\\ud800"}', "text", "payload.s"),
        ('{"s":"a\\udfffb"}', "text", "payload.s"),
        ('{"k\\ud800":1}', "text", 'payload["k\ufffd"]'),
        ('{"items":[1,2,3,{"price":1e400}]}', "number", "payload.items[3].price"),
        ('{"a b":{"c":NaN}}', "number", 'payload["a b"].c'),
    ],
)
def test_engine_text_that_breaks_a_rule_names_the_path(text: str, rule: str, path: str) -> None:
    with pytest.raises(BoundaryError) as caught:
        _decode(text)
    assert caught.value.rule == rule
    assert caught.value.path == path
    assert f"`{path}`" in caught.value.message


@pytest.mark.parametrize(
    "text",
    [
        '{"n":9007199254740991,"m":-9007199254740991}',
        '{"f":1e21,"g":5e-324,"h":1.5,"z":-0}',
        '{"s":"\\ud83d\\ude00 \\u2028 \\u0000"}',
        "[[[[[[[[[[[[[[[[]]]]]]]]]]]]]]]]",
    ],
)
def test_strict_json_at_the_edges_is_accepted(text: str) -> None:
    assert _decode(text) == json.loads(text)


def test_size_and_depth_are_refused_before_parsing() -> None:
    with pytest.raises(BoundaryError) as caught:
        codec.scan("[" + "1," * 50_000 + "1]", what="the value", max_bytes=1_000, max_depth=8)
    assert caught.value.rule == "size"
    deep = "[" * 200_000 + "]" * 200_000
    with pytest.raises(BoundaryError) as caught:
        codec.scan(deep, what="the value", max_bytes=1_000_000, max_depth=64)
    assert caught.value.rule == "depth"


@pytest.mark.parametrize(
    ("value", "rule", "path"),
    [
        ({"x": float("inf")}, "number", "state.x"),
        ({"x": [float("nan")]}, "number", "state.x[0]"),
        ({"x": 2**53}, "integer", "state.x"),
        ({"x": 10**400}, "integer", "state.x"),
        ({"x": 2.0**60}, "integer", "state.x"),
        ({"x": "\udc00"}, "text", "state.x"),
        ({"x": {1, 2}}, "type", "state.x"),
        ({"a": [[[[1]]]]}, "depth", "state.a[0][0][0]"),
    ],
)
def test_host_values_that_break_a_rule_name_the_path(value: Any, rule: str, path: str) -> None:
    with pytest.raises(BoundaryError) as caught:
        codec.encode(value, root="state", max_bytes=10_000, max_depth=4)
    assert (caught.value.rule, caught.value.path) == (rule, path)


def test_argument_lists_name_their_items() -> None:
    with pytest.raises(BoundaryError) as caught:
        codec.encode(
            ["t", {"payload": {"p": float("inf")}}],
            root="arguments",
            roots=("topic", "event"),
            max_bytes=10_000,
            max_depth=8,
        )
    assert caught.value.path == "event.payload.p"


def test_the_size_unit_is_utf8_bytes_of_canonical_json() -> None:
    value = {"s": "é😀", "n": [1, 2.5]}
    text = json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    assert codec.measure(value) == len(text.encode("utf-8"))
    size = len(text.encode("utf-8"))
    assert size == 26
    assert codec.check(value, root="v", max_bytes=size, max_depth=2) == size
    with pytest.raises(BoundaryError):
        codec.check(value, root="v", max_bytes=len(text.encode()) - 1, max_depth=2)


def test_cut_counts_code_points_and_marks_the_cut() -> None:
    text = "😀" * 100
    assert codec.cut(text, 100) == text
    cut = codec.cut(text, 50)
    assert cut == "😀" * (50 - len(codec.TRUNCATED)) + codec.TRUNCATED
    assert len(codec.cut(text, 5)) == 5
    cut.encode("utf-8")


def test_clean_text_replaces_lone_surrogates_only() -> None:
    assert codec.clean_text("a\ud800b😀") == "a\ufffdb😀"
    assert codec.clean_text("plain") == "plain"


NESTED = st.recursive(
    st.integers(-5, 5) | st.text(alphabet='[]{}"\\ab', max_size=6),
    lambda children: (
        st.lists(children, max_size=3)
        | st.dictionaries(st.text(alphabet="[]{}ab", max_size=3), children, max_size=3)
    ),
    max_leaves=30,
)


def _depth(value: Any) -> int:
    if isinstance(value, list):
        return 1 + max((_depth(v) for v in value), default=0)
    if isinstance(value, dict):
        return 1 + max((_depth(v) for v in value.values()), default=0)
    return 0


@settings(max_examples=300, deadline=None)
@given(NESTED, st.integers(0, 8))
def test_depth_from_text_matches_the_value(value: Any, limit: int) -> None:
    text = json.dumps(value)
    assert codec.depth_exceeds(text, limit) == (_depth(value) > limit)
