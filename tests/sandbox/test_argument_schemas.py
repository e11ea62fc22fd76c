"""The compiled argument check agrees with jsonschema, the reference, on keep's schemas.

A value the compiled check accepts must be one jsonschema accepts (else a malformed call
would reach a connector), and every call's outcome and message must be what jsonschema
alone gives, so the messages an LLM repair loop reads do not change.
"""

from __future__ import annotations

import json
from functools import lru_cache
from typing import Any

import jsonschema  # type: ignore[import-untyped]
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from keep_sdk.connectors import builtin_manifest
from keep_sdk.connectors.configured import check_arguments_schema
from keep_sdk.contract.manifest import OperationManifest
from keep_sdk.errors import InvalidArguments
from keep_sdk.model import OperationKind
from keep_sdk.sandbox._arguments import _path, connector_arguments
from keep_sdk.sandbox._schemas import SCHEMA_TEXT_LIMIT, ArgumentSchema

_TEXT = st.text(alphabet=st.sampled_from("ab1Z@.-_ \n\u0663é"), max_size=8)
_SCALARS = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**66), max_value=2**66)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.sampled_from([0, 1, 1.0, -1, 2.5, 0.0])
    | _TEXT
)
_JSON = st.recursive(
    _SCALARS,
    lambda children: st.lists(children, max_size=4) | st.dictionaries(_TEXT, children, max_size=4),
    max_leaves=10,
)

_KEEP_TOML = [
    check_arguments_schema(
        {
            "type": "object",
            "properties": {
                "ticket": {"type": "string", "pattern": "^[A-Z]+-[0-9]+$"},
                "priority": {"enum": ["low", "high", 3, True, None]},
                "labels": {
                    "type": "array",
                    "items": {"type": "string", "minLength": 1},
                    "minItems": 1,
                    "maxItems": 3,
                    "uniqueItems": True,
                },
                "due": {"type": "string", "format": "date"},
            },
            "required": ["ticket"],
        }
    ),
    check_arguments_schema(
        {
            "type": "object",
            "properties": {
                "customer": {
                    "type": "object",
                    "properties": {
                        "email": {"type": "string", "format": "email"},
                        "age": {"type": "integer", "minimum": 18, "exclusiveMaximum": 130},
                        "tags": {"type": "object", "additionalProperties": {"type": "boolean"}},
                    },
                    "required": ["email"],
                    "additionalProperties": False,
                },
                "amount": {"type": "number", "exclusiveMinimum": 0, "maximum": 1e6},
                "kind": {"const": "refund"},
            },
            "required": ["customer", "kind"],
        }
    ),
]

_MCP = [
    {
        "$schema": "http://json-schema.org/draft-07/schema#",
        "type": "object",
        "properties": {
            "url": {"type": "string", "format": "uri"},
            "method": {"type": "string", "enum": ["GET", "POST"]},
            "headers": {
                "type": "object",
                "patternProperties": {"^[a-z-]+$": {"type": "string", "maxLength": 5}},
                "additionalProperties": False,
            },
            "retries": {"type": ["integer", "null"], "minimum": 0, "maximum": 3},
        },
        "required": ["url"],
        "additionalProperties": False,
    },
    {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "type": "object",
        "$defs": {
            "Point": {
                "type": "object",
                "properties": {"x": {"type": "number"}, "y": {"type": "number"}},
                "required": ["x", "y"],
            }
        },
        "properties": {
            "from": {"$ref": "#/$defs/Point"},
            "to": {"$ref": "#/$defs/Point", "additionalProperties": False},
            "via": {"type": "array", "items": {"$ref": "#/$defs/Point"}, "maxItems": 2},
            "note": {"anyOf": [{"type": "string", "pattern": "^n"}, {"type": "null"}]},
        },
        "minProperties": 1,
        "maxProperties": 3,
    },
]

_BUILTIN = [
    (f"{connector.name}.{op.name}", op)
    for connector in builtin_manifest().connectors
    for op in connector.operations
]


_NAMES = st.sampled_from(["a", "b", "c-d", "x1"])
_PATTERNS = st.sampled_from(["^a", "a$", "^[a-z]+$", "\\d", "^.{2,}$", "é", "^$", ".+@.+"])
_ENUM = st.lists(
    st.none()
    | st.booleans()
    | st.integers(-2, 2)
    | st.sampled_from([1.0, 0.5, "a", "", [1], {"a": 1}, [True]]),
    min_size=1,
    max_size=3,
)
_LEAF = st.fixed_dictionaries(
    {},
    optional={
        "type": st.sampled_from(["string", "integer", "number", "boolean", "null", "array"])
        | st.lists(st.sampled_from(["string", "integer", "null"]), min_size=1, unique=True),
        "enum": _ENUM,
        "const": _ENUM.map(lambda values: values[0]),
        "minLength": st.integers(0, 3),
        "maxLength": st.integers(0, 3),
        "pattern": _PATTERNS,
        "minimum": st.sampled_from([-1, 0, 0.5, 1]),
        "maximum": st.integers(-1, 1),
        "exclusiveMinimum": st.integers(-1, 1),
        "exclusiveMaximum": st.just(1.5),
        "minItems": st.integers(0, 2),
        "maxItems": st.integers(0, 2),
        "uniqueItems": st.booleans(),
        "minProperties": st.integers(0, 2),
        "maxProperties": st.integers(0, 2),
        "required": st.lists(_NAMES, max_size=2, unique=True),
        "format": st.sampled_from(["email", "date", "uri"]),
    },
)


def _fragment_schemas(depth: int = 0) -> st.SearchStrategy[Any]:
    """Schemas inside the compiled fragment, built from its keywords at random."""
    if depth >= 2:
        return _LEAF | st.booleans()
    sub = _fragment_schemas(depth + 1)
    nested = st.fixed_dictionaries(
        {},
        optional={
            "properties": st.dictionaries(_NAMES, sub, max_size=3),
            "patternProperties": st.dictionaries(_PATTERNS, sub, max_size=2),
            "additionalProperties": sub,
            "items": sub,
            "anyOf": st.lists(sub, min_size=1, max_size=3),
            "allOf": st.lists(sub, min_size=1, max_size=2),
        },
    )
    return _LEAF | st.builds(lambda leaf, more: {**leaf, **more}, _LEAF, nested)


def _op(schema: dict[str, Any]) -> OperationManifest:
    return OperationManifest(
        name="op", kind=OperationKind.MUTATION, permission="p", arguments=schema
    )


_OTHER = [(f"config.op{index}", _op(schema)) for index, schema in enumerate(_KEEP_TOML + _MCP)]


@lru_cache(maxsize=64)
def _reference(schema_text: str) -> Any:
    schema = json.loads(schema_text)
    return jsonschema.validators.validator_for(schema)(schema)


@lru_cache(maxsize=64)
def _checks(schema_text: str) -> ArgumentSchema:
    return ArgumentSchema(schema_text)


def _text(op: OperationManifest) -> str:
    return json.dumps(op.arguments, sort_keys=True)


def _reference_outcome(name: str, op: OperationManifest, value: Any) -> str | None:
    errors = sorted(_reference(_text(op)).iter_errors(value), key=lambda e: list(e.path))
    problems = [
        f"arguments of ctx.{name}: `{_path(error.absolute_path)}`: {error.message}"
        for error in errors
    ]
    return f"invalid arguments for ctx.{name}: " + "; ".join(problems) if problems else None


def _mostly(good: st.SearchStrategy[Any], off: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    """`good` most of the time, `off` otherwise."""
    return st.integers(0, 15).flatmap(lambda roll: off if roll == 15 else good)


def _strings(schema: dict[str, Any]) -> st.SearchStrategy[Any]:
    low = schema.get("minLength", 0)
    high = max(low, schema.get("maxLength", low + 6))
    near = st.text(min_size=max(0, low - 1), max_size=min(high + 1, low + 7))
    if "pattern" not in schema:
        return _mostly(st.text(min_size=low, max_size=min(high, low + 6)), near | _TEXT)
    limit = schema.get("maxLength", 10**9)
    matching = st.from_regex(schema["pattern"]).filter(lambda text: low <= len(text) <= limit)
    return _mostly(matching, near | _TEXT | matching.map(lambda text: text + "\n"))


def _numbers(schema: dict[str, Any]) -> st.SearchStrategy[Any]:
    edges = [
        schema[key]
        for key in ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum")
        if key in schema
    ]
    near = [edge + step for edge in edges for step in (-1, -0.5, 0, 0.5, 1)]
    return st.sampled_from([*near, 0, 1.0, 20, True, False]) | st.integers() | st.floats(-10, 10)


def _from_schema(schema: Any, defs: dict[str, Any], depth: int = 0) -> st.SearchStrategy[Any]:
    """Values shaped by `schema`: mostly valid, sometimes a little off, sometimes any JSON."""
    if not isinstance(schema, dict) or depth > 4:
        return _JSON
    options: list[st.SearchStrategy[Any]] = []
    if "$ref" in schema:
        options.append(_from_schema(defs[schema["$ref"].rsplit("/", 1)[1]], defs, depth + 1))
    if "enum" in schema:
        options.append(st.sampled_from(schema["enum"]))
    if "const" in schema:
        options.append(st.just(schema["const"]))
    for sub in [*schema.get("anyOf", []), *schema.get("allOf", [])]:
        options.append(_from_schema(sub, defs, depth + 1))
    types = schema.get("type", [])
    for kind in [types] if isinstance(types, str) else types:
        if kind == "string":
            options.append(_strings(schema))
        elif kind in ("integer", "number"):
            options.append(_numbers(schema))
        elif kind == "boolean":
            options.append(st.booleans())
        elif kind == "null":
            options.append(st.none())
        elif kind == "array":
            low = schema.get("minItems", 0)
            items = _from_schema(schema.get("items", {}), defs, depth + 1)
            options.append(st.lists(items, min_size=max(0, low - 1), max_size=low + 3))
    if "properties" in schema or types == "object":
        options.append(_objects(schema, defs, depth))
    return _mostly(st.one_of(options), _JSON) if options else _JSON


def _objects(schema: dict[str, Any], defs: dict[str, Any], depth: int) -> st.SearchStrategy[Any]:
    properties = {
        name: _from_schema(sub, defs, depth + 1)
        for name, sub in schema.get("properties", {}).items()
    }
    required = [name for name in schema.get("required", []) if name in properties]
    shaped = st.fixed_dictionaries(
        {name: properties[name] for name in required},
        optional={name: s for name, s in properties.items() if name not in required},
    )
    extra = st.dictionaries(_TEXT | st.sampled_from(["x-id", "colour"]), _JSON, max_size=2)

    def spoil(parts: tuple[dict[str, Any], dict[str, Any], str | None]) -> Any:
        value, more, dropped = parts
        value = {**more, **value}
        if dropped is not None:
            del value[dropped]
        return value

    return _mostly(shaped, st.tuples(shaped, extra, st.sampled_from([None, *required])).map(spoil))


def _values(op: OperationManifest) -> st.SearchStrategy[Any]:
    return _from_schema(op.arguments, op.arguments.get("$defs", {}))


def _check(name: str, op: OperationManifest, value: Any) -> None:
    checks = _checks(_text(op))
    reference = _reference(_text(op))
    if checks.compiled is not None and checks.compiled(value):
        assert reference.is_valid(value), f"compiled check accepted {value!r}"
    expected = sorted(
        repr((list(e.absolute_path), e.message)) for e in reference.iter_errors(value)
    )
    got = sorted(repr((list(e.absolute_path), e.message)) for e in checks.errors(value))
    assert got == expected
    if isinstance(value, dict):
        assert _outcome(name, op, value) == _today(name, op, value)


def _outcome(name: str, op: OperationManifest, value: Any) -> tuple[str, str]:
    """What a call with `value` does now: accepted, or the error's type and message."""
    try:
        arguments = connector_arguments(name, op, [value], validate=True)
    except Exception as error:
        return (type(error).__name__, str(error))
    assert arguments is value
    return ("accepted", "")


def _today(name: str, op: OperationManifest, value: Any) -> tuple[str, str]:
    """What the same call did with jsonschema alone."""
    try:
        message = _reference_outcome(name, op, value)
    except Exception as error:
        return (type(error).__name__, str(error))
    return ("InvalidArguments", message) if message else ("accepted", "")


@pytest.mark.parametrize(("name", "op"), _BUILTIN + _OTHER, ids=[n for n, _ in _BUILTIN + _OTHER])
@settings(
    max_examples=30,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)
@given(data=st.data())
def test_the_compiled_check_and_jsonschema_decide_every_value_alike(
    name: str, op: OperationManifest, data: st.DataObject
) -> None:
    _check(name, op, data.draw(_values(op)))


@pytest.mark.parametrize(("name", "op"), _BUILTIN + _OTHER, ids=[n for n, _ in _BUILTIN + _OTHER])
def test_every_schema_keep_uses_gets_a_compiled_check(name: str, op: OperationManifest) -> None:
    assert ArgumentSchema(_text(op)).compiled is not None


@settings(max_examples=80, deadline=None, suppress_health_check=list(HealthCheck))
@given(schema=_fragment_schemas(), data=st.data())
def test_inside_the_fragment_the_compiled_check_never_accepts_what_jsonschema_rejects(
    schema: Any, data: st.DataObject
) -> None:
    text = json.dumps({"type": "object", "properties": {"a": schema}}, sort_keys=True)
    checks = _checks(text)
    if checks.compiled is None:
        return
    reference = _reference(text)
    for value in [data.draw(_from_schema(schema, {})) for _ in range(4)] + [data.draw(_JSON)]:
        if checks.compiled({"a": value}):
            assert reference.is_valid({"a": value}), f"compiled check accepted {value!r}"


def test_a_value_the_compiled_check_rejects_but_jsonschema_accepts_is_accepted() -> None:
    op = _op({"type": "object", "properties": {"code": {"type": "string", "pattern": "^a$"}}})
    checks = ArgumentSchema(_text(op))
    assert checks.compiled is not None
    assert not checks.compiled({"code": "a\n"})
    assert connector_arguments("x.op", op, [{"code": "a\n"}], validate=True) == {"code": "a\n"}
    with pytest.raises(InvalidArguments, match="`code`: 'b' does not match '\\^a\\$'"):
        connector_arguments("x.op", op, [{"code": "b"}], validate=True)


def test_format_is_not_checked_as_it_is_not_today() -> None:
    op = _op({"type": "object", "properties": {"to": {"type": "string", "format": "email"}}})
    assert ArgumentSchema(_text(op)).compiled is not None
    assert connector_arguments("x.op", op, [{"to": "nobody"}], validate=True) == {"to": "nobody"}


_BEYOND = {
    "invalid regex": {"type": "object", "properties": {"a": {"type": "string", "pattern": "(x"}}},
    "unknown $ref": {"type": "object", "properties": {"a": {"$ref": "#/$defs/Missing"}}},
    "recursive $ref": {
        "type": "object",
        "$defs": {"Node": {"type": "object", "properties": {"next": {"$ref": "#/$defs/Node"}}}},
        "properties": {"a": {"$ref": "#/$defs/Node"}},
    },
    "fanning $ref": {
        "type": "object",
        "$defs": {
            f"D{level}": {
                "properties": {f"x{n}": {"$ref": f"#/$defs/D{level + 1}"} for n in range(6)}
            }
            for level in range(5)
        }
        | {"D5": {"type": "string"}},
        "properties": {"a": {"$ref": "#/$defs/D0"}},
        "required": ["a"],
    },
    "not": {"type": "object", "properties": {"a": {"not": {"type": "string", "pattern": "^a$"}}}},
    "oneOf": {"type": "object", "properties": {"a": {"oneOf": [{"type": "integer"}, {}]}}},
    "inner $": {"type": "object", "properties": {"a": {"type": "string", "pattern": "(?!a$)"}}},
    "quote in a name": {
        "type": "object",
        "properties": {'a"+str(1/0)+"': {"type": "string"}},
        "required": ['a"+str(1/0)+"'],
    },
    "backslash in an enum": {
        "type": "object",
        "properties": {"a": {"enum": ["x\\", "x"]}},
        "required": ["a"],
    },
    "unknown type": {"type": "object", "properties": {"a": {"type": "text"}}},
    "draft 4": {
        "$schema": "http://json-schema.org/draft-04/schema#",
        "type": "object",
        "properties": {"a": {"type": "integer"}},
    },
    "huge": {
        "type": "object",
        "properties": {f"p{i}": {"type": "string"} for i in range(SCHEMA_TEXT_LIMIT // 20)},
    },
    "deep": {
        "type": "object",
        "properties": {"a": json.loads('{"type": "array", "items":' * 60 + "{}" + "}" * 60)},
    },
}


@pytest.mark.parametrize("schema", list(_BEYOND.values()), ids=list(_BEYOND))
def test_a_schema_beyond_the_compiled_fragment_is_checked_by_jsonschema_as_today(
    schema: dict[str, Any],
) -> None:
    op = _op(schema)
    assert ArgumentSchema(_text(op)).compiled is None
    values = [
        {},
        {"p0": 5},
        {"a": "x"},
        {"a": 1.0},
        {"a": "a\n"},
        {"a": [[1]]},
        {"a": {"next": {}}},
    ]
    outcomes = [_outcome("x.op", op, value) for value in values]
    assert outcomes == [_today("x.op", op, value) for value in values]
    assert {kind for kind, _ in outcomes} != {"accepted"}
