"""invalid-arguments: an object literal passed to a connector operation that its schema refuses.

What it does: reads the object literal passed as the argument of
``ctx.<connector>.<operation>(...)`` and checks it against the JSON schema the
connector manifest gives for the operation's argument: a key the schema does
not allow (with the closest allowed key), a required key that is missing, and
a literal value (string, number, boolean, null, array, object) of the wrong
type. Values computed at run time and literals with spreads or computed keys
are checked only as far as they can be read. A required key that a misspelled
key resembles is reported once, as the misspelling.

Why is this bad? The host validates the arguments against the same schema and
refuses the call at run time: the run fails as a logic error after the
handler has already done its earlier work, and a misspelled optional key is
not even an error at run time in connectors that ignore it.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterator, Mapping
from typing import Any

import tree_sitter

from keep_sdk.contract.manifest import Manifest
from keep_sdk.validator._diagnostics import Severity
from keep_sdk.validator.facts import Analysis, CapabilityCall
from keep_sdk.validator.fields import Field
from keep_sdk.validator.rule import Finding, Rule, RuleMeta
from keep_sdk.validator.rules._support import suggestion, why

__all__ = ["rule"]

Node = tree_sitter.Node

_LITERAL_TYPES = {
    "string": ("string",),
    "template_string": ("string",),
    "true": ("boolean",),
    "false": ("boolean",),
    "null": ("null",),
    "array": ("array",),
    "object": ("object",),
}

META = RuleMeta(
    id="invalid-arguments",
    severity=Severity.ERROR,
    description="A connector operation is called with arguments its schema refuses.",
    rationale=why(__doc__),
    messages={
        "unknown-key": "`ctx.{target}` takes no argument `{key}`{suggestion}",
        "missing-key": "`ctx.{target}` requires the argument `{key}`",
        "wrong-type": "the argument `{key}` of `ctx.{target}` must be {expected}, not {actual}",
    },
    hint="Pass the arguments `ctx.{target}` declares: {allowed}.",
    hints={
        "missing-key": (
            "Add `{key}` to the argument object; `ctx.{target}` requires {required} "
            "(run `keep connectors` to see each argument's type)."
        ),
        "wrong-type": "Pass {expected} as `{key}` (convert it with String(...), Number(...)...).",
    },
)


def check(analysis: Analysis) -> Iterator[Finding]:
    """Object-literal arguments of connector calls checked against the operations' schemas."""
    if not analysis.calls:
        return
    schemas = _schemas(analysis.connectors)
    checked: set[int] = set()
    for call in analysis.calls:
        if call.operation is None or not call.arguments:
            continue
        argument = _unwrapped(call.arguments[0])
        if argument.type != "object" or argument.id in checked:
            continue
        checked.add(argument.id)
        schema = schemas.get((call.connector or "", call.operation))
        if schema is not None:
            yield from _check_object(analysis, call, argument, schema)


_CACHE: dict[int, tuple[Manifest, dict[tuple[str, str], Mapping[str, Any]]]] = {}


def _schemas(manifest: Manifest) -> dict[tuple[str, str], Mapping[str, Any]]:
    """Each operation's argument schema by (connector, operation), cached per manifest."""
    cached = _CACHE.get(id(manifest))
    if cached is not None and cached[0] is manifest:
        return cached[1]
    schemas: dict[tuple[str, str], Mapping[str, Any]] = {
        (connector.name, operation.name): operation.arguments
        for connector in manifest.connectors
        for operation in connector.operations
    }
    if len(_CACHE) > 16:
        _CACHE.clear()
    _CACHE[id(manifest)] = (manifest, schemas)
    return schemas


def _unwrapped(node: Node) -> Node:
    kind = node.type
    while kind == "parenthesized_expression" and node.named_child_count:
        node = node.named_children[0]
        kind = node.type
    return node


def _check_object(
    analysis: Analysis, call: CapabilityCall, literal: Node, schema: Mapping[str, Any]
) -> Iterator[Finding]:
    properties: Mapping[str, Any] = schema.get("properties") or {}
    closed = schema.get("additionalProperties") is False
    required = [key for key in schema.get("required") or () if isinstance(key, str)]
    present: set[str] = set()
    misspelled: set[str] = set()
    complete = True
    for entry in literal.named_children:
        kind = entry.type
        key_node: Node | None = entry
        value: Node | None = None
        key: str | None = None
        if kind == "shorthand_property_identifier":
            key = analysis.text(entry)
        elif kind == "pair":
            key_node = entry.child_by_field_id(Field.KEY)
            value = entry.child_by_field_id(Field.VALUE)
            key = _key(analysis, key_node)
        elif kind == "comment":
            continue
        if key is None or key_node is None:
            complete = False
            continue
        present.add(key)
        if key not in properties:
            if closed:
                close = difflib.get_close_matches(key, list(properties), n=1, cutoff=0.6)
                misspelled.update(close)
                common = _common(call, properties, required)
                arguments = {**common, "key": key, "suggestion": suggestion(key, properties)}
                yield Finding("unknown-key", key_node, arguments, call.handler)
            continue
        if value is not None:
            problem = _type_problem(analysis, value, properties[key])
            if problem is not None:
                expected, actual = problem
                common = _common(call, properties, required)
                arguments = {**common, "key": key, "expected": expected, "actual": actual}
                yield Finding("wrong-type", value, arguments, call.handler)
    if complete:
        for key in required:
            if key not in present and key not in misspelled:
                arguments = {**_common(call, properties, required), "key": key}
                yield Finding("missing-key", literal, arguments, call.handler)


def _common(
    call: CapabilityCall, properties: Mapping[str, Any], required: list[str]
) -> dict[str, str]:
    return {
        "target": f"{call.connector}.{call.operation}",
        "allowed": ", ".join(f"`{key}`" for key in properties) or "no arguments",
        "required": ", ".join(f"`{key}`" for key in required),
    }


def _key(analysis: Analysis, key: Node | None) -> str | None:
    if key is None:
        return None
    if key.type == "property_identifier":
        return analysis.text(key)
    if key.type == "string":
        return analysis.text(key)[1:-1]
    return None


def _type_problem(
    analysis: Analysis, value: Node, schema: Mapping[str, Any]
) -> tuple[str, str] | None:
    kind = value.type
    if kind == "parenthesized_expression":
        value = _unwrapped(value)
        kind = value.type
    if kind == "number":
        text = analysis.text(value).replace("_", "")
        actual: tuple[str, ...] = ("number", "integer") if text.isdigit() else ("number",)
        shown = "a number"
    elif kind in _LITERAL_TYPES:
        actual = _LITERAL_TYPES[kind]
        shown = {"string": "a string", "boolean": "a boolean", "null": "null"}.get(
            actual[0], f"an {actual[0]}" if actual[0][0] in "aeiou" else f"a {actual[0]}"
        )
    else:
        return None
    accepted = _types(schema)
    if accepted is None or any(t in accepted for t in actual):
        return None
    return " or ".join(_article(t) for t in sorted(accepted)), shown


def _types(schema: Mapping[str, Any]) -> set[str] | None:
    """The JSON types `schema` accepts, or None when it does not say."""
    declared = schema.get("type")
    if isinstance(declared, str):
        return {declared}
    if isinstance(declared, list):
        return {t for t in declared if isinstance(t, str)}
    options = schema.get("anyOf") or schema.get("oneOf")
    if isinstance(options, list):
        found: set[str] = set()
        for option in options:
            types = _types(option) if isinstance(option, Mapping) else None
            if types is None:
                return None
            found |= types
        return found
    return None


def _article(json_type: str) -> str:
    if json_type == "null":
        return "null"
    if json_type == "integer":
        return "an integer"
    return f"an {json_type}" if json_type[0] in "aeiou" else f"a {json_type}"


rule = Rule(META, check)
