"""prepare-result-shape: ``prepare`` returns an object the host cannot read as a `PrepareResult`.

What it does: reads the object literals ``prepare`` returns (``return {...}``
in its own body, or the body of an arrow function) and checks them against
the `PrepareResult` contract: keys other than ``reservations``, ``data``,
``ui`` and ``wakeAt`` (with the closest key as a suggestion: ``wakeat`` →
``wakeAt``), ``reservations`` that is not an array, reservations that are not
``{ topic, ids }`` objects with ``ids`` an array, and ``ui`` that is not an
object with only ``title``. Values computed at run time are not checked.

Why is this bad? The host validates what ``prepare`` returns and fails the run
as a logic error when it does not fit the contract: the consumer never gets
past ``prepare`` until the script is fixed (no mutation has run yet, so the
rule warns rather than refusing the script).
"""

from __future__ import annotations

from collections.abc import Iterator

import tree_sitter
from pydantic import BaseModel

from keep_sdk.model import HandlerPhase, PrepareResult, Reservation, UiInfo
from keep_sdk.validator._diagnostics import Severity
from keep_sdk.validator.facts import Analysis, Handler
from keep_sdk.validator.fields import Field
from keep_sdk.validator.rule import Finding, Rule, RuleMeta
from keep_sdk.validator.rules._support import suggestion, why

__all__ = ["rule"]

Node = tree_sitter.Node

_LITERALS = frozenset(
    {"string", "template_string", "number", "true", "false", "null", "array", "object"}
)


def _keys(model: type[BaseModel]) -> tuple[str, ...]:
    """The keys a script may write for `model`: its camelCase aliases (as documented)."""
    return tuple(field.alias or name for name, field in model.model_fields.items())


def _accepted(model: type[BaseModel]) -> frozenset[str]:
    """Every key the contract accepts for `model`: aliases and field names."""
    return frozenset(model.model_fields) | frozenset(_keys(model))


RESULT_KEYS = _keys(PrepareResult)
RESERVATION_KEYS = _keys(Reservation)
UI_KEYS = _keys(UiInfo)
_RESULT_ACCEPTED = _accepted(PrepareResult)
_RESERVATION_ACCEPTED = _accepted(Reservation)
_UI_ACCEPTED = _accepted(UiInfo)

META = RuleMeta(
    id="prepare-result-shape",
    severity=Severity.WARNING,
    description="`prepare` returns an object that does not fit the prepare result contract.",
    rationale=why(__doc__),
    messages={
        "unknown-key": "`{key}` is not a key of prepare's result{suggestion}",
        "reservations-not-array": "`reservations` must be an array of `{{ topic, ids }}`",
        "bad-reservation": "a reservation must be `{{ topic, ids }}`: {detail}",
        "bad-ui": "`ui` must be an object with an optional `title`: {detail}",
    },
    hint=(
        "Return `{{ reservations: [{{ topic, ids: [messageId, ...] }}], data, ui: {{ title }}, "
        "wakeAt }}` from prepare; every key is optional and no other key is read."
    ),
)


def check(analysis: Analysis) -> Iterator[Finding]:
    """The object literals every `prepare` handler's own body returns."""
    for returned in analysis.returns:
        if returned.handler.phase is not HandlerPhase.PREPARE:
            continue
        literal = _object(returned.node)
        if literal is not None:
            yield from _result(analysis, returned.handler, literal, _RESULT_ACCEPTED)


def _object(node: Node) -> Node | None:
    while node.type in ("parenthesized_expression", "await_expression") and node.named_child_count:
        node = node.named_children[-1]
    return node if node.type == "object" else None


def _entries(analysis: Analysis, literal: Node) -> Iterator[tuple[str, Node, Node | None]]:
    """(key, key node, value node) of each plain entry of `literal`."""
    for entry in literal.named_children:
        if entry.type == "pair":
            key_node = entry.child_by_field_id(Field.KEY)
            if key_node is None:
                continue
            if key_node.type == "property_identifier":
                key = analysis.text(key_node)
            elif key_node.type == "string":
                key = analysis.text(key_node)[1:-1]
            else:
                continue
            yield key, key_node, entry.child_by_field_id(Field.VALUE)
        elif entry.type == "shorthand_property_identifier":
            yield analysis.text(entry), entry, None


def _result(
    analysis: Analysis, handler: Handler, literal: Node, accepted: frozenset[str]
) -> Iterator[Finding]:
    for key, key_node, value in _entries(analysis, literal):
        if key not in accepted:
            arguments = {"key": key, "suggestion": suggestion(key, RESULT_KEYS)}
            yield Finding("unknown-key", key_node, arguments, handler)
        elif value is None:
            continue
        elif key == "reservations":
            yield from _reservations(analysis, handler, value)
        elif key == "ui":
            yield from _ui(analysis, handler, value)


def _reservations(analysis: Analysis, handler: Handler, value: Node) -> Iterator[Finding]:
    if value.type in _LITERALS and value.type != "array":
        yield Finding("reservations-not-array", value, {}, handler)
        return
    if value.type != "array":
        return
    accepted = _RESERVATION_ACCEPTED
    for element in value.named_children:
        if element.type in _LITERALS and element.type != "object":
            detail = "this is not an object"
            yield Finding("bad-reservation", element, {"detail": detail}, handler)
            continue
        if element.type != "object":
            continue
        keys: set[str] = set()
        spread = any(child.type == "spread_element" for child in element.named_children)
        for key, key_node, inner in _entries(analysis, element):
            keys.add(key)
            if key not in accepted:
                close = suggestion(key, RESERVATION_KEYS)
                detail = f"`{key}` is not a key of a reservation{close}"
                yield Finding("bad-reservation", key_node, {"detail": detail}, handler)
            elif key == "ids" and inner is not None and inner.type in _LITERALS - {"array"}:
                detail = "`ids` must be an array of messageIds"
                yield Finding("bad-reservation", inner, {"detail": detail}, handler)
        missing = [key for key in RESERVATION_KEYS if key not in keys]
        if missing and not spread and not (keys - accepted):
            detail = " and ".join(f"`{key}`" for key in missing) + " missing"
            yield Finding("bad-reservation", element, {"detail": detail}, handler)


def _ui(analysis: Analysis, handler: Handler, value: Node) -> Iterator[Finding]:
    if value.type in _LITERALS and value.type not in ("object", "null"):
        yield Finding("bad-ui", value, {"detail": "this is not an object"}, handler)
        return
    if value.type != "object":
        return
    accepted = _UI_ACCEPTED
    for key, key_node, _ in _entries(analysis, value):
        if key not in accepted:
            detail = f"`{key}` is not a key of `ui`{suggestion(key, UI_KEYS)}"
            yield Finding("bad-ui", key_node, {"detail": detail}, handler)


rule = Rule(META, check)
