"""One operation's argument schema: a compiled fast check beside the reference validator.

`jsonschema` is the reference: it decides every value the compiled check rejects and
explains the rejection. `fastjsonschema` compiles a schema to Python once, and a value the
compiled check accepts is accepted without running jsonschema. That is only sound where the
compiled check never accepts a value jsonschema rejects, so a schema gets a compiled check
only inside a fragment where both libraries agree:

- only the keywords in `_LEAVES`, `_ANNOTATIONS` and the monotone combinators (`anyOf`,
  `allOf`, `properties`, `patternProperties`, `additionalProperties`, one-schema `items`);
  `not`, `oneOf` and `if` are left out because a check that is stricter somewhere (the
  compiled check reads a `pattern`'s `$` as end of text) would turn looser under them;
- `$ref` only to a non-recursive `#/$defs/NAME` of a draft 2019-09 or later schema, which
  is inlined as an `allOf` member (what `$ref` beside other keywords means there);
- `$schema` absent or naming draft 6, 7, 2019-09 or 2020-12, and the schema valid against
  its meta-schema;
- `format` never checked, as keep's jsonschema validator has no format checker;
- at most `SCHEMA_TEXT_LIMIT` characters of schema text, `_DEPTH_LIMIT` levels and
  `_NODE_LIMIT` subschemas once references are inlined;
- property names, `required` names, `enum` and `const` strings and patterns that the
  generated code spells as literals hold no quote or control character, and no backslash
  outside a pattern (fastjsonschema writes Python source from the schema, and an MCP
  server's schema is outside input).

Any other schema, and one fastjsonschema fails to compile, is checked by jsonschema alone.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any

import fastjsonschema  # type: ignore[import-untyped,unused-ignore]
import jsonschema  # type: ignore[import-untyped]

__all__ = ["SCHEMA_TEXT_LIMIT", "ArgumentSchema"]

SCHEMA_TEXT_LIMIT = 64 * 1024
_DEPTH_LIMIT = 24
_NODE_LIMIT = 2_000

_LEAVES = frozenset(
    {
        "type",
        "enum",
        "const",
        "required",
        "minLength",
        "maxLength",
        "pattern",
        "minimum",
        "maximum",
        "exclusiveMinimum",
        "exclusiveMaximum",
        "minItems",
        "maxItems",
        "uniqueItems",
        "minProperties",
        "maxProperties",
        "format",
    }
)
_ANNOTATIONS = frozenset(
    {
        "title",
        "description",
        "default",
        "examples",
        "$comment",
        "deprecated",
        "readOnly",
        "writeOnly",
    }
)
_SCHEMA_MAPS = frozenset({"properties", "patternProperties"})
_SCHEMA_LISTS = frozenset({"anyOf", "allOf"})
_ONE_SCHEMA = frozenset({"additionalProperties", "items"})
_DRAFTS = (
    jsonschema.Draft6Validator,
    jsonschema.Draft7Validator,
    jsonschema.Draft201909Validator,
    jsonschema.Draft202012Validator,
)
_INLINES_REFS = (jsonschema.Draft201909Validator, jsonschema.Draft202012Validator)
_UNESCAPED_DOLLAR = re.compile(r"(?<!\\)\$")
_LOCAL_DEF = re.compile(r"#/\$defs/([A-Za-z0-9_.-]+)")
_UNSPELLABLE = re.compile(r'["\\\x00-\x1f\x7f]')
_UNSPELLABLE_PATTERN = re.compile(r'["\x00-\x1f\x7f]')


class _Unsupported(Exception):
    """The schema leaves the fragment where the compiled check agrees with jsonschema."""


class ArgumentSchema:
    """The checks of one argument schema, built once per schema text.

    `errors(value)` is what jsonschema's `iter_errors` yields for `value`, sorted by path;
    the compiled check only spares running jsonschema on a value it accepts.
    """

    def __init__(self, schema_text: str) -> None:
        schema = json.loads(schema_text)
        validator_class = jsonschema.validators.validator_for(schema)
        self.validator: Any = validator_class(schema)
        self.compiled: Callable[[Any], bool] | None = _compiled(
            schema, schema_text, validator_class
        )

    def errors(self, value: Any) -> list[Any]:
        """jsonschema's errors for `value` (none when it is valid), sorted by path."""
        if self.compiled is not None and self.compiled(value):
            return []
        return sorted(self.validator.iter_errors(value), key=lambda e: list(e.path))


def _compiled(schema: Any, schema_text: str, validator_class: Any) -> Callable[[Any], bool] | None:
    """The compiled check of `schema`, or None where only jsonschema may decide."""
    if len(schema_text) > SCHEMA_TEXT_LIMIT or not isinstance(schema, dict):
        return None
    if validator_class not in _DRAFTS or "draft-04" in str(schema.get("$schema", "")):
        return None
    try:
        validator_class.check_schema(schema)
        definitions = schema.get("$defs", {}) if validator_class in _INLINES_REFS else {}
        fast_schema = _Fragment(definitions).copy(schema, depth=0, expanding=frozenset())
    except Exception:
        return None
    validate = _compile(fast_schema, detailed=False) or _compile(fast_schema, detailed=True)
    if validate is None:
        return None

    def accepts(value: Any) -> bool:
        try:
            validate(value)
        except Exception:
            return False
        return True

    return accepts


def _compile(schema: Any, *, detailed: bool) -> Callable[[Any], Any] | None:
    """fastjsonschema's validator of `schema`, or None where it fails to compile one (the
    short exceptions are faster to raise in a failing `anyOf` branch but some schemas only
    compile with the detailed ones)."""
    try:
        validate: Callable[[Any], Any] = fastjsonschema.compile(
            schema, use_default=False, use_formats=False, detailed_exceptions=detailed
        )
    except Exception:
        return None
    return validate


class _Fragment:
    """The walk that copies a schema into the compiled fragment, inlining local `$ref`s,
    and raises `_Unsupported` where the schema leaves it. It builds at most `_NODE_LIMIT`
    subschemas, so references that fan out cannot make the copy grow without bound."""

    def __init__(self, definitions: Any) -> None:
        self.definitions = definitions
        self.nodes = 0

    def copy(self, schema: Any, *, depth: int, expanding: frozenset[str]) -> Any:
        self.nodes += 1
        if self.nodes > _NODE_LIMIT or depth > _DEPTH_LIMIT:
            raise _Unsupported
        if isinstance(schema, bool):
            return schema
        if not isinstance(schema, dict):
            raise _Unsupported

        def deeper(sub: Any) -> Any:
            return self.copy(sub, depth=depth + 1, expanding=expanding)

        out: dict[str, Any] = {}
        extra: list[Any] = []
        for key, value in schema.items():
            if key in _ANNOTATIONS or (depth == 0 and key in ("$schema", "$defs")):
                out[key] = value
            elif key in _LEAVES:
                _check_leaf(key, value)
                out[key] = value
            elif key in _SCHEMA_MAPS:
                pattern_keys = key == "patternProperties"
                _check_names(list(value), _UNSPELLABLE_PATTERN if pattern_keys else _UNSPELLABLE)
                out[key] = {name: deeper(sub) for name, sub in value.items()}
            elif key in _SCHEMA_LISTS:
                out[key] = [deeper(sub) for sub in value]
            elif key in _ONE_SCHEMA:
                out[key] = deeper(value)
            elif key == "$ref":
                extra.append(self.inlined(value, depth=depth, expanding=expanding))
            else:
                raise _Unsupported
        if extra:
            out["allOf"] = [*out.get("allOf", []), *extra]
        if depth == 0:
            out.pop("$defs", None)
        return out

    def inlined(self, ref: Any, *, depth: int, expanding: frozenset[str]) -> Any:
        match = _LOCAL_DEF.fullmatch(ref) if isinstance(ref, str) else None
        if match is None or not isinstance(self.definitions, dict):
            raise _Unsupported
        name = match.group(1)
        if name in expanding or name not in self.definitions:
            raise _Unsupported
        return self.copy(self.definitions[name], depth=depth + 1, expanding=expanding | {name})


def _check_names(names: Any, spelling: re.Pattern[str] = _UNSPELLABLE) -> None:
    """`_Unsupported` unless every string in `names` (keys and items, recursively) is one
    the generated code spells as a literal without doubt."""
    if isinstance(names, str) and spelling.search(names):
        raise _Unsupported
    if isinstance(names, dict):
        _check_names(list(names), spelling)
        _check_names(list(names.values()), spelling)
    if isinstance(names, list):
        for item in names:
            _check_names(item, spelling)


def _check_leaf(key: str, value: Any) -> None:
    if key in ("required", "enum", "const"):
        _check_names(value)
    if key == "pattern":
        _check_names(value, _UNSPELLABLE_PATTERN)
        dollars = [m.start() for m in _UNESCAPED_DOLLAR.finditer(value)]
        if any(position != len(value) - 1 for position in dollars):
            raise _Unsupported
    if key in ("exclusiveMinimum", "exclusiveMaximum") and isinstance(value, bool):
        raise _Unsupported
