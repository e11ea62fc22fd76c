"""For any connector's operations and any seeded answers, a stand-in's read returns exactly
the seeded answer, each mutation is recorded once in call order, and the real connector
is never called."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import JsonValue

from keep_sdk.cases import StandInSeed
from keep_sdk.cases._standin import stand_in_for
from keep_sdk.connectors.configured import ConfiguredConnector, OperationSpec
from keep_sdk.errors import InvalidArguments, PreconditionFailed
from keep_sdk.model import OperationKind

_ARGUMENTS = {"properties": {"n": {"type": "integer"}}, "required": ["n"]}


class Unreachable(ConfiguredConnector):
    """A connector whose service must never be reached."""

    def call_operation(
        self, js_name: str, arguments: dict[str, JsonValue], *, idempotency_key: str | None
    ) -> JsonValue:
        raise AssertionError(f"the service was called: {js_name}")


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=5),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner),
    max_leaves=8,
)
names = st.from_regex(r"[a-z][A-Za-z0-9]{0,6}", fullmatch=True)
kinds = st.sampled_from([OperationKind.READ, OperationKind.MUTATION])


@st.composite
def worlds(draw: st.DrawFn) -> tuple[dict[str, OperationKind], dict[str, Any], list[Any]]:
    """Operations (name → kind), one seeded answer per operation, and calls to make."""
    operations = draw(st.dictionaries(names, kinds, min_size=1, max_size=5))
    answers = {name: draw(json_values) for name in operations}
    calls = draw(
        st.lists(
            st.tuples(st.sampled_from(sorted(operations)), st.integers()), min_size=1, max_size=8
        )
    )
    return operations, answers, calls


def _seeded(value: Any) -> list[dict[str, Any]]:
    """A seed that answers `value` to every call, whatever its shape."""
    return [{"result": value}]


@settings(max_examples=60, deadline=None)
@given(world=worlds(), plain=st.booleans())
def test_reads_answer_the_seed_and_mutations_are_recorded_once_in_order(
    world: tuple[dict[str, OperationKind], dict[str, Any], list[Any]], plain: bool
) -> None:
    operations, answers, calls = world
    specs = [
        OperationSpec(name, kind, f"x.{kind.value}", _ARGUMENTS)
        for name, kind in operations.items()
    ]
    real = Unreachable.define("x", specs)()
    reads = {n: v for n, v in answers.items() if operations[n] is OperationKind.READ}
    mutations = {n: v for n, v in answers.items() if operations[n] is OperationKind.MUTATION}

    def seed(value: Any) -> Any:
        return value if plain and not isinstance(value, list) else _seeded(value)

    stand_in = stand_in_for(
        real,
        StandInSeed.model_validate(
            {
                "answers": {n: seed(v) for n, v in reads.items()},
                "results": {n: seed(v) for n, v in mutations.items()},
            }
        ),
        where="case 'p'",
    )
    assert stand_in.manifest() == real.manifest()
    expected = []
    for number, (name, n) in enumerate(calls):
        if operations[name] is OperationKind.READ:
            assert stand_in.invoke(name, {"n": n}) == answers[name]
        else:
            key = f"key-{number}"
            assert stand_in.invoke(name, {"n": n}, idempotency_key=key) == answers[name]
            expected.append({"operation": name, "idempotencyKey": key, "params": {"n": n}})
    recorded = [
        {k: e[k] for k in ("operation", "idempotencyKey", "params")} for e in stand_in.effects()
    ]
    assert recorded == expected
    assert stand_in.problems == []


def test_the_real_argument_checks_refuse_bad_arguments_and_unseeded_reads_fail() -> None:
    specs = [
        OperationSpec("find", OperationKind.READ, "x.read", _ARGUMENTS),
        OperationSpec("make", OperationKind.MUTATION, "x.write", _ARGUMENTS),
    ]
    stand_in = stand_in_for(
        Unreachable.define("x", specs)(),
        StandInSeed(answers={"find": [{"when": {"n": 1}, "result": "one"}]}),
        where="case 'c'",
    )
    with pytest.raises(InvalidArguments, match="`m` is not a known field"):
        stand_in.invoke("find", {"n": 1, "m": 2})
    assert stand_in.invoke("find", {"n": 1}) == "one"
    with pytest.raises(PreconditionFailed, match=r"no answer seeded for x\.find matching"):
        stand_in.invoke("find", {"n": 2})
    assert stand_in.invoke("make", {"n": 3}, idempotency_key="k") == {}
    assert [e["params"] for e in stand_in.effects("make")] == [{"n": 3}]


def test_a_seed_for_an_operation_the_connector_lacks_is_a_problem() -> None:
    specs = [OperationSpec("find", OperationKind.READ, "x.read", _ARGUMENTS)]
    stand_in = stand_in_for(
        Unreachable.define("x", specs)(),
        StandInSeed(answers={"fnd": 1}, results={"find": 2}),
        where="case 'c'",
    )
    assert stand_in.problems == [
        "connectors.x.answers.fnd: x has no read 'fnd'; did you mean find? its reads: find",
        "connectors.x.results.find: x has no mutation or durable operation 'find'; its "
        "mutation or durable operations: none",
    ]
