"""The fast schema check accepts only what `jsonschema` accepts (differential tests)."""

from __future__ import annotations

import re
from typing import Any

import jsonschema  # type: ignore[import-untyped]
import pytest
from hypothesis import event, given, settings
from hypothesis import strategies as st

from keep_sdk.connectors import ConnectorSet
from keep_sdk.connectors.builtin import Gmail, Sheets, Slack
from keep_sdk.errors import InvalidArguments
from keep_sdk.model import OperationKind
from keep_sdk.sandbox.arguments import connector_arguments
from keep_sdk.sandbox.schemas import compile_accept

TYPES = ["object", "array", "string", "integer", "number", "boolean", "null"]
NAMES = st.sampled_from(["a", "b", "c"])
SCALARS = st.one_of(
    st.none(), st.booleans(), st.integers(-3, 3), st.text(alphabet="ab@", max_size=3)
)
NUMBERS = st.one_of(st.integers(-3, 3), st.floats(-3, 3, allow_nan=False))

LEAVES = st.one_of(
    st.just({}),
    st.booleans(),
    st.builds(
        lambda kind: {"type": kind},
        st.one_of(
            st.sampled_from(TYPES),
            st.lists(st.sampled_from(TYPES), min_size=1, max_size=3, unique=True),
        ),
    ),
    st.fixed_dictionaries(
        {"type": st.just("string")},
        optional={
            "minLength": st.integers(0, 3),
            "maxLength": st.integers(0, 3),
            "pattern": st.sampled_from(["^a", "b$", ".+@.+", "^[ab]*$"]),
            "title": st.text(max_size=3),
            "format": st.just("email"),
        },
    ),
    st.fixed_dictionaries(
        {},
        optional={
            "minimum": NUMBERS,
            "maximum": NUMBERS,
            "exclusiveMinimum": NUMBERS,
            "exclusiveMaximum": NUMBERS,
        },
    ),
    st.builds(lambda options: {"enum": options}, st.lists(SCALARS, min_size=1, max_size=3)),
    st.builds(lambda value: {"const": value}, SCALARS),
)


def _containers(inner: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    return st.one_of(
        st.fixed_dictionaries(
            {"type": st.just("object")},
            optional={
                "properties": st.dictionaries(NAMES, inner, max_size=3),
                "required": st.lists(NAMES, max_size=3, unique=True),
                "additionalProperties": st.one_of(st.booleans(), inner),
            },
        ),
        st.fixed_dictionaries(
            {},
            optional={
                "type": st.just("array"),
                "items": inner,
                "minItems": st.integers(0, 2),
                "maxItems": st.integers(0, 3),
            },
        ),
        st.builds(lambda branches: {"anyOf": branches}, st.lists(inner, min_size=1, max_size=3)),
        st.builds(lambda branches: {"allOf": branches}, st.lists(inner, min_size=1, max_size=3)),
    )


SCHEMAS = st.recursive(LEAVES, _containers, max_leaves=8)
INSTANCES = st.recursive(
    st.one_of(SCALARS, st.floats(-4, 4, allow_nan=False)),
    lambda inner: st.one_of(
        st.lists(inner, max_size=3), st.dictionaries(NAMES | st.just("z"), inner, max_size=3)
    ),
    max_leaves=8,
)


def _has_float(value: Any) -> bool:
    if isinstance(value, float):
        return True
    if isinstance(value, list):
        return any(map(_has_float, value))
    if isinstance(value, dict):
        return any(map(_has_float, value.values()))
    return False


def _valid(schema: Any, instance: Any) -> bool:
    validator_class = jsonschema.validators.validator_for(schema)
    return bool(validator_class(schema).is_valid(instance))


OBJECT_SCHEMAS = st.fixed_dictionaries(
    {"type": st.just("object")},
    optional={
        "properties": st.dictionaries(NAMES, SCHEMAS, max_size=3),
        "required": st.lists(NAMES, max_size=3, unique=True),
        "additionalProperties": st.one_of(st.booleans(), SCHEMAS),
    },
)
OBJECTS = st.dictionaries(NAMES | st.just("z"), SCALARS, max_size=4)
ARRAY_SCHEMAS = st.fixed_dictionaries(
    {"type": st.just("array")},
    optional={"items": SCHEMAS, "minItems": st.integers(0, 2), "maxItems": st.integers(0, 3)},
)
ARRAYS = st.lists(SCALARS, max_size=4)


@settings(max_examples=600, deadline=None)
@given(schema=SCHEMAS, instance=INSTANCES)
def test_the_fast_check_accepts_only_what_jsonschema_accepts(schema: Any, instance: Any) -> None:
    _check_against_jsonschema(schema, instance)


@settings(max_examples=400, deadline=None)
@given(schema=OBJECT_SCHEMAS, instance=OBJECTS)
def test_the_fast_check_of_objects_matches_jsonschema(schema: Any, instance: Any) -> None:
    _check_against_jsonschema(schema, instance)


@settings(max_examples=300, deadline=None)
@given(schema=ARRAY_SCHEMAS, instance=ARRAYS)
def test_the_fast_check_of_arrays_matches_jsonschema(schema: Any, instance: Any) -> None:
    _check_against_jsonschema(schema, instance)


BOUNDS = st.fixed_dictionaries(
    {"type": st.sampled_from(["integer", "number"])},
    optional={
        "minimum": NUMBERS,
        "maximum": NUMBERS,
        "exclusiveMinimum": NUMBERS,
        "exclusiveMaximum": NUMBERS,
    },
)


@settings(max_examples=300, deadline=None)
@given(schema=BOUNDS, instance=st.integers(-4, 4))
def test_the_fast_check_of_numbers_matches_jsonschema(schema: Any, instance: Any) -> None:
    _check_against_jsonschema(schema, instance)


def _check_against_jsonschema(schema: Any, instance: Any) -> None:
    """Accepted implies valid; without floats (an integral float is left to jsonschema)
    the two verdicts are equal."""
    accept = compile_accept(schema)
    assert accept is not None, schema
    valid = _valid(schema, instance)
    event(f"accepted={accept(instance)} valid={valid}")
    if accept(instance):
        assert valid, (schema, instance)
    if not _has_float(instance):
        assert accept(instance) == valid, (schema, instance)


@pytest.mark.parametrize(
    "schema",
    [
        {"$ref": "#/$defs/x", "$defs": {"x": {"type": "string"}}},
        {"oneOf": [{"type": "string"}]},
        {"type": "array", "items": [{"type": "string"}]},
        {"type": "array", "uniqueItems": True},
        {"type": "string", "pattern": "("},
        {"not": {"type": "string"}},
        {"type": "strange"},
    ],
)
def test_a_schema_outside_the_subset_is_left_to_jsonschema(schema: Any) -> None:
    assert compile_accept(schema) is None


def test_an_integral_float_is_left_to_jsonschema() -> None:
    accept = compile_accept({"type": "integer"})
    assert accept is not None
    assert not accept(1.0)
    assert _valid({"type": "integer"}, 1.0)


MUTATIONS = [
    (connector.name, op)
    for connector in ConnectorSet([Gmail(), Sheets(), Slack()]).manifest().connectors
    for op in connector.operations
    if op.kind in (OperationKind.MUTATION, OperationKind.DURABLE)
]


@pytest.mark.parametrize(
    ("connector", "op"), MUTATIONS, ids=lambda item: getattr(item, "name", item)
)
def test_every_built_in_mutation_schema_takes_the_fast_path(connector: str, op: Any) -> None:
    assert compile_accept(op.arguments) is not None, op.arguments


def test_a_valid_and_an_invalid_mutation_argument_get_the_verdict_of_jsonschema() -> None:
    op = next(op for name, op in MUTATIONS if name == "sheets" and op.name == "appendRow")
    good = {"spreadsheetId": "jobs", "values": ["j1", 1, 2.5, True, None]}
    assert connector_arguments("sheets.appendRow", op, [good], validate=True) == good
    bad = {"spreadsheetId": "", "values": [], "extra": 1}
    with pytest.raises(
        InvalidArguments, match=re.escape("invalid arguments for ctx.sheets.")
    ) as caught:
        connector_arguments("sheets.appendRow", op, [bad], validate=True)
    assert "spreadsheetId" in str(caught.value)
