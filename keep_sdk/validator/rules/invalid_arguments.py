"""invalid-arguments: an object literal passed to a connector operation that its schema refuses.

What it does: reads the object literal passed as the argument of
``ctx.<connector>.<operation>(...)`` and checks it against the JSON schema the
connector manifest gives for the operation's argument: a key the schema does
not allow (with the closest allowed key), a required key that is missing, and
a literal value (string, number, boolean, null, array, object) of the wrong
type. A value written wholly as a literal (strings without escapes, numbers,
booleans, null, and arrays and objects of those) is also checked against the
whole schema of its key: ``pattern``, ``minLength``, ``minItems``, ``minimum``,
``enum``, ``format``, nested objects (``channel: "#Sales Team"`` against a channel
pattern, ``values: []`` against ``minItems: 1``). Values computed at run time and
literals with spreads or computed keys are checked only as far as they can be
read. A required key that a misspelled key resembles is reported once, as the
misspelling.

Why is this bad? The host validates the arguments against the same schema and
refuses the call at run time: the run fails as a logic error after the
handler has already done its earlier work, and a misspelled optional key is
not even an error at run time in connectors that ignore it.
"""

from __future__ import annotations

import difflib
import json
from collections.abc import Iterator, Mapping
from typing import Any

import tree_sitter
from jsonschema import Draft202012Validator  # type: ignore[import-untyped]
from jsonschema.exceptions import SchemaError  # type: ignore[import-untyped]

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
        "schema": "the argument `{key}` of `ctx.{target}` breaks its schema: {problem}",
    },
    hint="Pass the arguments `ctx.{target}` declares: {allowed}.",
    hints={
        "missing-key": (
            "Add `{key}` to the argument object; `ctx.{target}` requires {required} "
            "(run `keep connectors` to see each argument's type)."
        ),
        "wrong-type": "Pass {expected} as `{key}` (convert it with String(...), Number(...)...).",
        "schema": (
            "Pass a `{key}` that `ctx.{target}` accepts: {rule} (run `keep connectors` to see "
            "its schema)."
        ),
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
                continue
            broken = _schema_problem(analysis, value, properties[key], schema)
            if broken is not None:
                common = _common(call, properties, required)
                problem_text, rule_text = broken
                arguments = {**common, "key": key, "problem": problem_text, "rule": rule_text}
                yield Finding("schema", value, arguments, call.handler)
    if complete:
        for key in required:
            if key not in present and key not in misspelled:
                arguments = {**_common(call, properties, required), "key": key}
                yield Finding("missing-key", literal, arguments, call.handler)


_UNREAD = object()
"""What `_literal` answers for a node that is not wholly a literal."""

_VALIDATORS: dict[str, Any] = {}


def _schema_problem(
    analysis: Analysis, value: Node, schema: Mapping[str, Any], root: Mapping[str, Any]
) -> tuple[str, str] | None:
    """The first way the literal `value` breaks `schema` (refs resolved in `root`): what is
    wrong and the rule it breaks; None when it holds or is not wholly a literal."""
    literal = _literal(analysis, value)
    if literal is _UNREAD:
        return None
    validator = _validator(
        {**schema, **{k: root[k] for k in ("$defs", "definitions") if k in root}}
    )
    if validator is None:
        return None
    error = next(iter(validator.iter_errors(literal)), None)
    if error is None:
        return None
    where = "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in error.absolute_path)
    message = str(error.message)
    if len(message) > 160:
        message = message[:157] + "..."
    rule = f"{error.validator} {json.dumps(error.validator_value)}"
    if len(rule) > 120:
        rule = str(error.validator)
    return (f"{where[1:] + ': ' if where else ''}{message}", rule)


def _validator(schema: Mapping[str, Any]) -> Any:
    text = json.dumps(schema, sort_keys=True, default=str)
    cached = _VALIDATORS.get(text)
    if cached is None:
        try:
            Draft202012Validator.check_schema(schema)
        except SchemaError:
            return None
        cached = Draft202012Validator(schema, format_checker=Draft202012Validator.FORMAT_CHECKER)
        if len(_VALIDATORS) > 256:
            _VALIDATORS.clear()
        _VALIDATORS[text] = cached
    return cached


def _literal(analysis: Analysis, node: Node) -> Any:
    """The JSON value `node` writes when it is wholly a literal, else `_UNREAD`."""
    node = _unwrapped(node)
    kind = node.type
    if kind in ("true", "false"):
        return kind == "true"
    if kind == "null":
        return None
    if kind in ("string", "template_string"):
        parts = [_piece(analysis.text(child), child.type) for child in node.named_children]
        return _UNREAD if any(part is None for part in parts) else "".join(map(str, parts))
    if kind == "number":
        return _number(analysis.text(node))
    if kind == "array":
        items = [_literal(analysis, child) for child in node.named_children]
        return _UNREAD if any(item is _UNREAD for item in items) else items
    if kind == "object":
        found: dict[str, Any] = {}
        for entry in node.named_children:
            if entry.type != "pair":
                return _UNREAD
            key = _key(analysis, entry.child_by_field_id(Field.KEY))
            inner = entry.child_by_field_id(Field.VALUE)
            if key is None or inner is None:
                return _UNREAD
            found[key] = _literal(analysis, inner)
            if found[key] is _UNREAD:
                return _UNREAD
        return found
    return _UNREAD


_ESCAPES = {"n": "\n", "t": "\t", "r": "\r", "b": "\b", "f": "\f", "v": "\v", "0": "\0"}


def _piece(text: str, kind: str) -> str | None:
    """The characters a string literal's fragment or escape sequence stands for, or None."""
    if kind == "string_fragment":
        return text
    if kind != "escape_sequence" or len(text) < 2:
        return None
    body = text[1:]
    if body in _ESCAPES:
        return _ESCAPES[body]
    if body[0] in "uUx":
        digits = body[2:-1] if body.startswith("u{") else body[1:]
        try:
            return chr(int(digits, 16))
        except ValueError:
            return None
    return (
        body if len(body) == 1 and not body.isalnum() and body not in "\r\n\u2028\u2029" else None
    )


def _number(text: str) -> Any:
    text = text.replace("_", "")
    try:
        return (
            int(text, 0)
            if text[:2].lower() in ("0x", "0o", "0b") or text.isdigit()
            else (float(text))
        )
    except ValueError:
        return _UNREAD


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
