"""Whatever a publish accepts, a peek returns; whatever a handler returns, the next phase gets.

Values are generated at and around every limit of a small policy (depth, size, the safe
integer range, astral characters and escapes) and sent through the real sandbox.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from keep_sdk.contract.codec import MAX_SAFE_INTEGER
from keep_sdk.model import HandlerPhase, HostPolicy, SandboxLimits
from keep_sdk.sandbox import (
    Completed,
    InternalFailure,
    LimitFailure,
    LogicFailure,
    ProcessIsolation,
)
from tests.sandbox.boundary_helpers import Isolated, TopicHost
from tests.sandbox.helpers import consumer, producer, request

LIMITS = SandboxLimits(
    cpu_time_s=2.0,
    wall_time_s=5.0,
    max_value_bytes=4_096,
    max_state_bytes=2_048,
    max_value_depth=8,
    max_log_bytes=4_096,
)
POLICY = HostPolicy(sandbox=LIMITS)

_EDGE_NUMBERS = st.sampled_from(
    [
        MAX_SAFE_INTEGER,
        -MAX_SAFE_INTEGER,
        MAX_SAFE_INTEGER + 1,
        -(MAX_SAFE_INTEGER + 1),
        2**63,
        0,
        -1,
        1e21,
        1e20,
        9007199254740991.0,
        5e-324,
        1.7976931348623157e308,
        0.1,
        1e-7,
        0.00001,
    ]
)
_TEXT = st.text(
    alphabet=st.sampled_from(
        ["a", "é", "日", "😀", "\U0010ffff", '"', "\\", "\n", "\x00", "\u2028"]
    )
    | st.characters(codec="utf-8"),
    max_size=40,
)
_LONG_TEXT = st.integers(0, 1_400).map(lambda n: "日😀a"[n % 3] * n)
_LEAVES = (
    st.none()
    | st.booleans()
    | _EDGE_NUMBERS
    | st.integers(-(2**60), 2**60)
    | st.floats(allow_nan=False, allow_infinity=False)
    | _TEXT
    | _LONG_TEXT
)
VALUES = st.recursive(
    _LEAVES,
    lambda children: st.lists(children, max_size=3) | st.dictionaries(_TEXT, children, max_size=3),
    max_leaves=12,
)
DEEP = st.integers(4, 10).map(lambda n: _nest(n))


def _nest(levels: int) -> Any:
    value: Any = "x"
    for index in range(levels):
        value = [value] if index % 2 else {"k": value}
    return value


def _same(left: Any, right: Any) -> bool:
    if isinstance(left, float) and isinstance(right, float | int):
        return math.isclose(left, right, rel_tol=0, abs_tol=0) or left == right
    if isinstance(left, list) and isinstance(right, list):
        return len(left) == len(right) and all(map(_same, left, right))
    if isinstance(left, dict) and isinstance(right, dict):
        return left.keys() == right.keys() and all(_same(left[k], right[k]) for k in left)
    return bool(left == right)


PUBLISH = producer(
    "const v = await ctx.gmail.search({});\n"
    "await ctx.publish('row.created', { title: 't', payload: v });\n"
    "return 1;"
)
PEEK = consumer(
    prepare="const [e] = await ctx.peek('row.created', { limit: 1 });\nreturn e.payload;"
)
RETURN = producer("return await ctx.gmail.search({});")
PASS_BACK = producer("return state;")


def _check_round_trips(isolated: Isolated, value: Any) -> None:
    host = TopicHost(read_result=value)
    published = isolated(request(PUBLISH, policy=POLICY), host).outcome
    event(f"publish: {published.kind} {getattr(published, 'limit', '')}".strip())
    if isinstance(published, Completed):
        peek_request = request(
            PEEK, HandlerPhase.PREPARE, policy=POLICY, subscribed_topics=("row.created",)
        )
        peeked = isolated(peek_request, host).outcome
        assert isinstance(peeked, Completed), peeked
        assert _same(peeked.result, value)
    else:
        assert isinstance(published, LimitFailure | InternalFailure | LogicFailure), published
        if not isinstance(published, LimitFailure):
            assert "`" in published.message, published
        assert host.events == []
    returned = isolated(request(RETURN, policy=POLICY), TopicHost(read_result=value)).outcome
    event(f"return: {returned.kind} {getattr(returned, 'limit', '')}".strip())
    if isinstance(returned, Completed):
        again = isolated(request(PASS_BACK, policy=POLICY, state=returned.result), None).outcome
        assert again == returned


@pytest.fixture(scope="module")
def pool() -> Iterator[ProcessIsolation]:
    with ProcessIsolation(prestart=1) as isolation:
        yield isolation


_SUPPRESSED = [HealthCheck.too_slow, HealthCheck.data_too_large]


@settings(max_examples=150, deadline=None, suppress_health_check=_SUPPRESSED)
@given(VALUES | DEEP)
def test_round_trips_in_process(value: Any) -> None:
    _check_round_trips(Isolated(None), value)


@settings(
    max_examples=30,
    deadline=None,
    suppress_health_check=[*_SUPPRESSED, HealthCheck.function_scoped_fixture],
)
@given(value=VALUES | DEEP)
def test_round_trips_in_a_worker(pool: ProcessIsolation, value: Any) -> None:
    _check_round_trips(Isolated(pool), value)
