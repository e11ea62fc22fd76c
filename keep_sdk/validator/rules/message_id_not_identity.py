"""message-id-not-identity: a ``messageId`` built only from fields that repeat across items.

What it does: warns about ``ctx.publish(topic, { messageId, ... })`` whose
``messageId`` is made only of fields that name who or what an item is about, not
which item it is: the sender (``from``, ``sender``, ``author``), the ``subject``, a
``title``, a ``status``, an ``amount``... (``messageId: m.from``, ``${m.from}-${m.subject}``).

Why is this bad? Publishing is deduplicated by ``messageId``. Two items from the
same sender (or with the same subject) get the same id, so every item after the
first is taken for a repeat and dropped without an error. An item's identity is its
id in the external system (``m.id``, ``row.rowId``), or a field that cannot repeat.
"""

from __future__ import annotations

from collections.abc import Iterator

import tree_sitter

from keep_sdk.validator._diagnostics import Severity
from keep_sdk.validator.facts import Analysis
from keep_sdk.validator.fields import Field
from keep_sdk.validator.rule import Finding, Rule, RuleMeta
from keep_sdk.validator.rules._runs import descendants
from keep_sdk.validator.rules._support import why
from keep_sdk.validator.rules.event_title import event_fields, topic_name

__all__ = ["NOT_IDENTITY", "rule"]

Node = tree_sitter.Node

NOT_IDENTITY = frozenset(
    {
        "from",
        "sender",
        "to",
        "cc",
        "replyTo",
        "author",
        "owner",
        "assignee",
        "subject",
        "title",
        "status",
        "state",
        "type",
        "kind",
        "category",
        "label",
        "channel",
        "city",
        "country",
        "amount",
        "total",
        "currency",
        "priority",
    }
)
"""Field names that describe an item and repeat across items. Fields that can be the
identity of what an event stands for (``email`` of a contact, ``name``) are not here."""

META = RuleMeta(
    id="message-id-not-identity",
    severity=Severity.WARNING,
    description="A `messageId` is built only from fields that repeat across items.",
    rationale=why(__doc__),
    messages={
        "repeats": (
            "the `messageId` of this event to `{topic}` is built only from {fields}, which "
            "repeat across items: every later item with the same {fields} is dropped as a "
            "duplicate"
        ),
    },
    hint=(
        "Build messageId from the item's own id in the external system (`m.id`, "
        "`row.rowId`), adding {fields} only as a prefix if you want it readable."
    ),
)


def check(analysis: Analysis) -> Iterator[Finding]:
    """Publishes whose messageId reads only describing fields (and constant text)."""
    for call in analysis.calls:
        if call.method != "publish" or len(call.arguments) < 2:
            continue
        fields = event_fields(analysis, call.arguments[1])
        value = fields.get("messageId") if fields is not None else None
        if value is None:
            continue
        names = field_names(analysis, value)
        if names and all(name in NOT_IDENTITY for name in names):
            topic = topic_name(analysis, call.arguments[0])
            shown = ", ".join(f"`{name}`" for name in sorted(set(names)))
            yield Finding("repeats", value, {"topic": topic, "fields": shown}, call.handler)


def field_names(analysis: Analysis, value: Node) -> list[str] | None:
    """The last property of each value `value` reads (``m.payload.from`` → ``from``); None
    when it reads anything else (a variable, a call, an index)."""
    names: list[str] = []
    for node in descendants(value):
        if node.type == "member_expression":
            parent = node.parent
            if _is_method(node):
                continue
            if (
                parent is not None
                and parent.type == "member_expression"
                and parent.child_by_field_id(Field.OBJECT) == node
                and not _is_method(parent)
            ):
                continue
            prop = node.child_by_field_id(Field.PROPERTY)
            if prop is None:
                return None
            names.append(analysis.text(prop))
        elif node.type in ("identifier", "subscript_expression") and not _inside_member(
            node, value
        ):
            return None
    return names


def _is_method(member: Node) -> bool:
    parent = member.parent
    return (
        parent is not None
        and parent.type == "call_expression"
        and parent.child_by_field_id(Field.FUNCTION) == member
    )


def _inside_member(node: Node, root: Node) -> bool:
    current = node.parent
    while current is not None and current.id != root.id:
        if current.type == "member_expression":
            return True
        current = current.parent
    return root.type == "member_expression" and node.id != root.id


rule = Rule(META, check)
