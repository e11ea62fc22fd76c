"""A durable result is checked at the edge by the boundary codec, before anything is stored;
a secret comes back masked in every encoding."""

from __future__ import annotations

import base64
import json
from typing import Any
from urllib.parse import quote, quote_plus

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from keep_sdk.connectors.secrets import Redactor
from keep_sdk.contract.codec import BoundaryError, check
from keep_sdk.contract.durable import check_correlation_key
from keep_sdk.errors import InvalidArguments
from keep_sdk.model import HostPolicy, SandboxLimits
from keep_sdk.runtime.durable import notification_result

POLICY = HostPolicy(sandbox=SandboxLimits(max_value_bytes=2048, max_value_depth=8))
LIMITS = POLICY.sandbox

texts = st.text(alphabet=st.characters(codec=None, categories=None), max_size=12)
scalars = st.none() | st.booleans() | st.integers() | st.floats() | texts
values = st.recursive(
    scalars,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(texts, inner, max_size=4),
    max_leaves=40,
)


def _codec_accepts(value: Any) -> bool:
    try:
        check(
            value, root="result", max_bytes=LIMITS.max_value_bytes, max_depth=LIMITS.max_value_depth
        )
    except BoundaryError:
        return False
    return True


@settings(max_examples=300, deadline=None)
@given(values)
def test_a_result_is_accepted_exactly_when_the_codec_accepts_it(value: Any) -> None:
    text = json.dumps(value, ensure_ascii=True)
    accepted = _codec_accepts(value)
    if accepted:
        assert notification_result(text, POLICY) == value
    else:
        with pytest.raises(InvalidArguments, match="nothing was recorded and the run keeps"):
            notification_result(text, POLICY)


@pytest.mark.parametrize(
    "text",
    [
        "NaN",
        "[Infinity]",
        '{"a": 1e999}',
        '"\\ud800"',
        "[" * 20_000 + "]" * 20_000,
        json.dumps("x" * 5000),
        "9007199254740993",
        "not json",
    ],
    ids=["nan", "inf", "overflow", "lone-surrogate", "deep", "large", "unsafe-int", "garbage"],
)
def test_hostile_results_are_refused_with_a_reason(text: str) -> None:
    with pytest.raises(InvalidArguments) as caught:
        notification_result(text, POLICY)
    assert "the result" in caught.value.message


@pytest.mark.parametrize(
    "key", ["kc-" + "a" * 40 + "\n", "kc-" + "a" * 40 + " ", " kc-" + "a" * 40]
)
def test_a_correlation_key_with_anything_around_it_is_malformed(key: str) -> None:
    with pytest.raises(InvalidArguments, match="malformed correlation key"):
        check_correlation_key(key)


ENCODINGS = [
    lambda t: t,
    lambda t: json.dumps(t, ensure_ascii=True)[1:-1],
    lambda t: "".join(
        f"\\u{int.from_bytes(t.encode('utf-16-be')[i : i + 2]):04X}"
        for i in range(0, len(t.encode("utf-16-be")), 2)
    ),
    lambda t: quote(t, safe=""),
    quote_plus,
    lambda t: base64.b64encode(t.encode()).decode(),
    lambda t: base64.urlsafe_b64encode(t.encode()).decode().rstrip("="),
]


@settings(max_examples=200, deadline=None)
@given(
    secret=st.text(alphabet=st.characters(blacklist_categories=("Cs",)), min_size=6, max_size=30),
    which=st.integers(min_value=0, max_value=len(ENCODINGS) - 1),
    before=st.text(max_size=10),
    after=st.text(max_size=10),
)
def test_a_secret_never_survives_redaction_in_any_encoding(
    secret: str, which: int, before: str, after: str
) -> None:
    encoded = ENCODINGS[which](secret)
    if not encoded:
        return
    cleaned = Redactor([secret])(f"error: {before}{encoded}{after} end")
    assert encoded not in cleaned
