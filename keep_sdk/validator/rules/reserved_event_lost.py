"""reserved-event-lost: ``prepare`` reserves every peeked event, its data carries the first only.

What it does: warns when ``prepare`` peeks several events (``ctx.peek(topic, {limit:
N})``, N > 1), reserves all of them (``ids: events.map((e) => e.messageId)``) and
returns ``data`` built from the first event alone (``events[0]``, ``const [event] =
events``), or from none of them while ``mutate`` or ``next`` acts (calls ``ctx``).

Why is this bad? Every reserved event is consumed when the run commits, whatever
``mutate`` did with it. ``mutate`` sees only ``prepared.data``: the events whose data is
not there are consumed without being acted on, and lost without an error. It is the
natural first "fix" of ``multiple-mutations`` (reserve everything, act on one).
"""

from __future__ import annotations

from collections.abc import Iterator

import tree_sitter

from keep_sdk.model import HandlerPhase
from keep_sdk.validator._diagnostics import Severity
from keep_sdk.validator.facts import Analysis, CapabilityCall
from keep_sdk.validator.fields import Field
from keep_sdk.validator.rule import Finding, Related, Rule, RuleMeta
from keep_sdk.validator.rules._runs import bound_name, descendants, identifiers, strip
from keep_sdk.validator.rules._support import why

__all__ = ["rule"]

Node = tree_sitter.Node

META = RuleMeta(
    id="reserved-event-lost",
    severity=Severity.WARNING,
    description="`prepare` reserves every peeked event but passes the data of fewer to `mutate`.",
    rationale=why(__doc__),
    messages={
        "first": (
            "`prepare` reserves every event of `{events}` but its `data` carries only the "
            "first: the other reserved events are consumed without being acted on"
        ),
        "none": (
            "`prepare` reserves every event of `{events}` but its `data` carries none of "
            "them: they are consumed without `mutate` seeing them"
        ),
    },
    hint=(
        "Reserve exactly the events `mutate` acts on: peek with `{{ limit: 1 }}` and reserve "
        "`[event.messageId]` (the others stay pending and the consumer runs again for each), "
        "or pass every reserved event's data in `data` when one mutation covers them all."
    ),
)


def check(analysis: Analysis) -> Iterator[Finding]:
    """Prepare returns whose reservations use the whole peek result and whose data does not."""
    for call in analysis.calls:
        if call.method != "peek" or call.via or call.handler.phase is not HandlerPhase.PREPARE:
            continue
        if _limit(analysis, call) == 1:
            continue
        name = bound_name(call.node)
        if name is None or name.type != "identifier":
            continue
        events = analysis.text(name)
        every, first = _names(analysis, call.handler.node, events)
        for returned in analysis.returns:
            if returned.handler is not call.handler:
                continue
            literal = strip(returned.node)
            if literal.type != "object":
                continue
            entries = _entries(analysis, literal)
            reservations = entries.get("reservations")
            if reservations is None or not _uses_all(analysis, reservations, every):
                continue
            data = entries.get("data")
            if data is not None and _uses_all(analysis, data, every):
                continue
            carries_first = data is not None and _uses_first(analysis, data, events, first)
            if not carries_first and not _acts(analysis, call):
                continue
            related = (Related(data, "the data `mutate` receives"),) if data is not None else ()
            yield Finding(
                "first" if carries_first else "none",
                reservations,
                {"events": events},
                call.handler,
                related=related,
            )


def _acts(analysis: Analysis, call: CapabilityCall) -> bool:
    """Whether the consumer's `mutate` or `next` calls anything through ctx."""
    return any(
        other.handler.name == call.handler.name
        and other.handler.kind is call.handler.kind
        and other.handler.phase in (HandlerPhase.MUTATE, HandlerPhase.NEXT)
        for other in analysis.calls
    )


def _limit(analysis: Analysis, call: CapabilityCall) -> int | None:
    if len(call.arguments) < 2 or call.arguments[1].type != "object":
        return None
    value = _entries(analysis, call.arguments[1]).get("limit")
    text = analysis.text(value) if value is not None else ""
    return int(text) if text.isdigit() else None


def _entries(analysis: Analysis, literal: Node) -> dict[str, Node]:
    found: dict[str, Node] = {}
    for entry in literal.named_children:
        if entry.type == "shorthand_property_identifier":
            found[analysis.text(entry)] = entry
        elif entry.type == "pair":
            key = entry.child_by_field_id(Field.KEY)
            value = entry.child_by_field_id(Field.VALUE)
            if key is not None and value is not None:
                found[analysis.text(key).strip("'\"")] = value
    return found


def _is_first(analysis: Analysis, node: Node) -> bool:
    parent = node.parent
    if parent is None or parent.type != "subscript_expression":
        return False
    index = parent.child_by_field_id(Field.INDEX)
    return parent.child_by_field_id(Field.OBJECT) == node and (
        index is not None and analysis.text(index) == "0"
    )


def _names(analysis: Analysis, function: Node, events: str) -> tuple[set[str], set[str]]:
    """Names that stand for every event (`events`, ``events.map(...)``) and for the first."""
    every: set[str] = {events}
    first: set[str] = set()
    for node in descendants(function):
        if node.type != "variable_declarator":
            continue
        target = node.child_by_field_id(Field.NAME)
        value = node.child_by_field_id(Field.VALUE)
        if target is None or value is None:
            continue
        value = strip(value)
        if target.type == "array_pattern" and analysis.text(value) == events:
            items = [c for c in target.named_children if c.type == "identifier"]
            first.update(analysis.text(item) for item in items[:1])
        elif target.type == "identifier" and value.type == "subscript_expression":
            obj = value.child_by_field_id(Field.OBJECT)
            if obj is not None and analysis.text(obj) == events and _is_first(analysis, obj):
                first.add(analysis.text(target))
        elif target.type == "identifier" and value.type == "call_expression":
            callee = value.child_by_field_id(Field.FUNCTION)
            obj = callee.child_by_field_id(Field.OBJECT) if callee is not None else None
            if (
                callee is not None
                and callee.type == "member_expression"
                and obj is not None
                and analysis.text(obj) in every
            ):
                every.add(analysis.text(target))
    return every, first


def _uses_all(analysis: Analysis, node: Node, every: set[str]) -> bool:
    data = analysis.source.data
    return any(
        name in every and not _is_first(analysis, use) for name, use in identifiers(node, data)
    )


def _uses_first(analysis: Analysis, node: Node, events: str, first: set[str]) -> bool:
    data = analysis.source.data
    return any(
        name in first or (name == events and _is_first(analysis, use))
        for name, use in identifiers(node, data)
    )


rule = Rule(META, check)
