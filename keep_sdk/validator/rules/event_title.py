"""event-title: a publish without a ``title``, or with a constant one.

What it does: warns about ``ctx.publish(topic, {...})`` calls whose event
object has no ``title`` or whose title is a constant string.

Why is this bad? Event titles are the delegation interface: people see them
in traces, notifications and escalations. A missing or constant title
("New email") cannot tell one event from another; a good one carries a
stable identifier and a descriptor: ``Email from alice@example.com: "Invoice"``.
"""

from __future__ import annotations

from collections.abc import Iterator

import tree_sitter

from keep_sdk.validator._diagnostics import Severity
from keep_sdk.validator.facts import Analysis
from keep_sdk.validator.fields import Field
from keep_sdk.validator.rule import Finding, Rule, RuleMeta
from keep_sdk.validator.rules._support import why
from keep_sdk.validator.scope import string_literal

__all__ = ["event_fields", "rule", "topic_name"]

META = RuleMeta(
    id="event-title",
    severity=Severity.WARNING,
    description="A published event has no title or a constant one.",
    rationale=why(__doc__),
    messages={
        "missing": "this event to `{topic}` has no `title`",
        "constant": "the title of this event to `{topic}` is the same for every event",
    },
    hint=(
        "Give each event a title naming what it is, with a stable identifier: "
        'title: `Email from ${{email.from}}: "${{email.subject}}"`.'
    ),
)


def event_fields(
    analysis: Analysis, event: tree_sitter.Node
) -> dict[str, tree_sitter.Node | None] | None:
    """Keys of an event object literal mapped to their value nodes; None if not readable."""
    if event.type != "object":
        return None
    fields: dict[str, tree_sitter.Node | None] = {}
    for child in event.named_children:
        if child.type == "spread_element":
            return None
        if child.type == "pair":
            key = child.child_by_field_id(Field.KEY)
            if key is None:
                continue
            name = string_literal(key, analysis.source.data) or analysis.text(key)
            fields[name] = child.child_by_field_id(Field.VALUE)
        elif child.type == "shorthand_property_identifier":
            fields[analysis.text(child)] = None
    return fields


def topic_name(analysis: Analysis, node: tree_sitter.Node) -> str:
    """The topic a publish names: the string's value, or the expression's text."""
    return string_literal(node, analysis.source.data) or analysis.text(node)


def is_constant(node: tree_sitter.Node, data: bytes) -> bool:
    """True for a string literal, a template without substitutions, or a sum of those."""
    if string_literal(node, data) is not None:
        return True
    if node.type == "binary_expression":
        left = node.child_by_field_id(Field.LEFT)
        right = node.child_by_field_id(Field.RIGHT)
        return (
            left is not None
            and right is not None
            and is_constant(left, data)
            and (is_constant(right, data))
        )
    return False


def check(analysis: Analysis) -> Iterator[Finding]:
    """Publishes whose event literal lacks a title or has a constant one."""
    for call in analysis.calls:
        if call.method != "publish":
            continue
        topic = topic_name(analysis, call.arguments[0]) if call.arguments else "?"
        if len(call.arguments) < 2:
            yield Finding("missing", call.node, {"topic": topic}, call.handler)
            continue
        fields = event_fields(analysis, call.arguments[1])
        if fields is None:
            continue
        if "title" not in fields:
            yield Finding("missing", call.arguments[1], {"topic": topic}, call.handler)
            continue
        value = fields["title"]
        if value is not None and is_constant(value, analysis.source.data):
            yield Finding("constant", value, {"topic": topic}, call.handler)


rule = Rule(META, check)
