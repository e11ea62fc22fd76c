"""A fast check that accepts a value only when its JSON Schema certainly does.

`jsonschema` walks a schema with a fresh validator per subschema: about 150 µs for
one ``sheets.appendRow`` argument, paid on every mutate phase. `compile_accept`
turns a schema built from a small set of keywords (the ones connector manifests
use) into nested Python predicates. A predicate answers True only when the value
is valid under the schema as `jsonschema` reads it; False means "not certain",
and the caller then runs `jsonschema` for the verdict and its messages. Where
matching `jsonschema` exactly would need care (an integral float as an
``integer``, an ``enum`` of objects), the predicate answers False. A schema with
any other keyword compiles to None: only `jsonschema` checks it.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any, Final

__all__ = ["Accept", "compile_accept"]

Accept = Callable[[Any], bool]
"""True only when the value is certainly valid."""

_ANNOTATIONS: Final = frozenset(
    {"title", "description", "default", "examples", "$comment", "deprecated", "format"}
)
_HANDLED: Final = frozenset(
    {
        "type",
        "properties",
        "required",
        "additionalProperties",
        "items",
        "anyOf",
        "allOf",
        "enum",
        "const",
        "minLength",
        "maxLength",
        "pattern",
        "minimum",
        "maximum",
        "exclusiveMinimum",
        "exclusiveMaximum",
        "minItems",
        "maxItems",
    }
)
_SCALARS: Final = (str, int, bool, type(None))


class _Unsupported(Exception):
    pass


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


_TYPES: Final[dict[str, Accept]] = {
    "object": lambda value: isinstance(value, dict),
    "array": lambda value: isinstance(value, list),
    "string": lambda value: isinstance(value, str),
    "integer": lambda value: isinstance(value, int) and not isinstance(value, bool),
    "number": _is_number,
    "boolean": lambda value: isinstance(value, bool),
    "null": lambda value: value is None,
}


def _same(a: Any, b: Any) -> bool:
    """Equal as JSON Schema compares, for scalars only (else not certain)."""
    return isinstance(a, _SCALARS) and type(a) is type(b) and a == b


def _type_check(declared: Any) -> Accept:
    names = [declared] if isinstance(declared, str) else declared
    if not isinstance(names, list) or not names or any(name not in _TYPES for name in names):
        raise _Unsupported
    checks = [_TYPES[name] for name in names]
    return lambda value: any(check(value) for check in checks)


def _bound(schema: dict[str, Any], key: str) -> int | float | None:
    bound = schema.get(key)
    if bound is not None and not _is_number(bound):
        raise _Unsupported
    return bound


def _object_checks(schema: dict[str, Any]) -> list[Accept]:
    checks: list[Accept] = []
    properties = schema.get("properties", {})
    if not isinstance(properties, dict):
        raise _Unsupported
    compiled = {name: _compile(sub) for name, sub in properties.items()}
    if compiled:
        checks.append(
            lambda value: (
                not isinstance(value, dict)
                or all(check(value[name]) for name, check in compiled.items() if name in value)
            )
        )
    required = schema.get("required", [])
    if not isinstance(required, list) or not all(isinstance(name, str) for name in required):
        raise _Unsupported
    if required:
        checks.append(
            lambda value: not isinstance(value, dict) or all(name in value for name in required)
        )
    extra = schema.get("additionalProperties", True)
    if extra is False:
        known = frozenset(compiled)
        checks.append(lambda value: not isinstance(value, dict) or value.keys() <= known)
    elif extra is not True:
        extra_check = _compile(extra)
        checks.append(
            lambda value: (
                not isinstance(value, dict)
                or all(extra_check(item) for name, item in value.items() if name not in compiled)
            )
        )
    return checks


def _array_checks(schema: dict[str, Any]) -> list[Accept]:
    checks: list[Accept] = []
    if "items" in schema:
        if not isinstance(schema["items"], dict | bool):
            raise _Unsupported
        item_check = _compile(schema["items"])
        checks.append(
            lambda value: not isinstance(value, list) or all(item_check(item) for item in value)
        )
    least, most = schema.get("minItems"), schema.get("maxItems")
    for count in (least, most):
        if count is not None and (not isinstance(count, int) or isinstance(count, bool)):
            raise _Unsupported
    if least is not None or most is not None:
        low, high = least or 0, most
        checks.append(
            lambda value: (
                not isinstance(value, list)
                or (len(value) >= low and (high is None or len(value) <= high))
            )
        )
    return checks


def _string_checks(schema: dict[str, Any]) -> list[Accept]:
    checks: list[Accept] = []
    least, most = schema.get("minLength"), schema.get("maxLength")
    for count in (least, most):
        if count is not None and (not isinstance(count, int) or isinstance(count, bool)):
            raise _Unsupported
    if least is not None or most is not None:
        low, high = least or 0, most
        checks.append(
            lambda value: (
                not isinstance(value, str)
                or (len(value) >= low and (high is None or len(value) <= high))
            )
        )
    if "pattern" in schema:
        if not isinstance(schema["pattern"], str):
            raise _Unsupported
        try:
            pattern = re.compile(schema["pattern"])
        except re.error:
            raise _Unsupported from None
        checks.append(lambda value: not isinstance(value, str) or pattern.search(value) is not None)
    return checks


def _number_checks(schema: dict[str, Any]) -> list[Accept]:
    low, high = _bound(schema, "minimum"), _bound(schema, "maximum")
    above, below = _bound(schema, "exclusiveMinimum"), _bound(schema, "exclusiveMaximum")
    if low is None and high is None and above is None and below is None:
        return []

    def within(value: Any) -> bool:
        if not _is_number(value):
            return True
        return (
            (low is None or value >= low)
            and (high is None or value <= high)
            and (above is None or value > above)
            and (below is None or value < below)
        )

    return [within]


def _combined(branches: list[Accept], combine: Callable[[Any], bool]) -> Accept:
    return lambda value: combine(check(value) for check in branches)


def _choice_checks(schema: dict[str, Any]) -> list[Accept]:
    checks: list[Accept] = []
    for key, combine in (("anyOf", any), ("allOf", all)):
        if key in schema:
            branches = schema[key]
            if not isinstance(branches, list) or not branches:
                raise _Unsupported
            checks.append(_combined([_compile(branch) for branch in branches], combine))
    if "enum" in schema:
        options = schema["enum"]
        if not isinstance(options, list):
            raise _Unsupported
        checks.append(lambda value: any(_same(value, option) for option in options))
    if "const" in schema:
        constant = schema["const"]
        checks.append(lambda value: _same(value, constant))
    return checks


def _compile(schema: Any) -> Accept:
    if schema is True:
        return lambda _value: True
    if schema is False:
        return lambda _value: False
    if not isinstance(schema, dict):
        raise _Unsupported
    if any(key not in _HANDLED and key not in _ANNOTATIONS for key in schema):
        raise _Unsupported
    checks: list[Accept] = []
    if "type" in schema:
        checks.append(_type_check(schema["type"]))
    checks += _object_checks(schema)
    checks += _array_checks(schema)
    checks += _string_checks(schema)
    checks += _number_checks(schema)
    checks += _choice_checks(schema)
    if not checks:
        return lambda _value: True
    if len(checks) == 1:
        return checks[0]
    return lambda value: all(check(value) for check in checks)


def compile_accept(schema: Any) -> Accept | None:
    """A predicate true only for values `schema` certainly accepts, or None when the
    schema uses a keyword this module does not handle."""
    try:
        return _compile(schema)
    except _Unsupported:
        return None
