"""An old tool call's argument object → the arguments of the operation that replaces it.

The original tools took ``{method, params, requestBody, account}`` or the same
fields flat. ``params`` and ``requestBody`` are read into the flat form, ``account``
and keys the operation has no use for are dropped, keys are renamed, and the
values whose meaning differs here are translated (a Gmail query, a sheet range,
``values`` as a list of rows) or flagged for review.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass, field

import tree_sitter

from keep_sdk.validator.fields import Field
from keep_sdk.validator.migrate._query import translate_gmail_query
from keep_sdk.validator.migrate._tools import ToolOperation
from keep_sdk.validator.scope import string_literal

__all__ = ["Arguments", "tool_arguments"]

Node = tree_sitter.Node
Text = Callable[[Node], str]

_NESTED = ("params", "requestBody")
_RANGE = re.compile(r"^(?:(?:'[^']*'|[^!]+)!)?([A-Z]+)?(\d+)?(?::[A-Z]*\d*)?$")


@dataclass
class Arguments:
    """The new call's ``key: value`` texts, what was dropped, the notes, the reviews
    (``TODO(migrate): review:``), or `todo`: why the call cannot be rewritten."""

    parts: list[str] = field(default_factory=list)
    dropped: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    reviews: list[str] = field(default_factory=list)
    todo: str | None = None


def _entries(text: Text, obj: Node) -> list[tuple[str, Node]] | None:
    found: list[tuple[str, Node]] = []
    for child in obj.named_children:
        if child.type == "comment":
            continue
        if child.type == "shorthand_property_identifier":
            found.append((text(child), child))
            continue
        if child.type != "pair":
            return None
        key = child.child_by_field_id(Field.KEY)
        value = child.child_by_field_id(Field.VALUE)
        if key is None or value is None:
            return None
        if key.type == "string":
            name = string_literal(key, _source(key))
        elif key.type == "property_identifier":
            name = text(key)
        else:
            return None
        if name is None:
            return None
        found.append((name, value))
    return found


def _flat(text: Text, argument: Node) -> list[tuple[str, Node]] | str:
    entries = _entries(text, argument)
    if entries is None:
        return "its arguments are not one plain object literal: pass the operation's arguments"
    flat: list[tuple[str, Node]] = []
    for key, value in entries:
        if key not in _NESTED:
            flat.append((key, value))
            continue
        inner = _entries(text, value) if value.type == "object" else None
        if inner is None:
            return f"`{key}` is not an object literal: pass its fields as the operation's arguments"
        flat.extend(inner)
    return flat


def _source(node: Node) -> bytes:
    """The whole source `node` was parsed from (what `string_literal` reads its bytes in)."""
    root = node
    while root.parent is not None:
        root = root.parent
    return root.text or b""


def _literal(text: Text, node: Node) -> str | None:
    if node.type != "string":
        return None
    return string_literal(node, _source(node))


def tool_arguments(text: Text, argument: Node, mapping: ToolOperation) -> Arguments:
    """Convert `argument` (the old call's object literal) for `mapping`'s operation."""
    result = Arguments()
    flat = _flat(text, argument)
    if isinstance(flat, str):
        result.todo = flat
        return result
    renames = dict(mapping.renames)
    for key, value in flat:
        if key == "method":
            continue
        if key in mapping.dropped:
            if key == "range" and mapping.target == "sheets.listRows":
                offset = _range(text, value, result)
                if offset:
                    result.parts.append(f"offset: {offset}")
            result.dropped.append(key)
            continue
        name = renames.get(key, key)
        rendered = text(value)
        if mapping.target == "gmail.search" and name == "query":
            rendered = _query(text, value, result)
        elif mapping.target == "sheets.appendRow" and name == "values":
            converted = _row(text, value, result)
            if converted is None:
                return result
            rendered = converted
        result.parts.append(f"{name}: {rendered}")
    return result


def _query(text: Text, value: Node, result: Arguments) -> str:
    original = _literal(text, value)
    if original is None:
        result.reviews.append(
            "the query is passed as it was; `ctx.gmail.search` matches words in from, to, "
            "subject and body and `from:x`, not Gmail's operators (is:, label:, subject:, -x)"
        )
        return text(value)
    translated = translate_gmail_query(original)
    if translated.widened:
        result.notes.append(
            f"the query {original!r} became {translated.query!r}: "
            f"{', '.join(translated.widened)} now looked for in from, to, subject and body alike"
        )
    if translated.lost:
        result.reviews.append(
            f"the Gmail query {original!r} lost {', '.join(translated.lost)} "
            "(no equivalent here): filter the messages in code, or keep a cursor "
            "(`after`) and rely on each event's messageId to skip repeats"
        )
    if translated.query == original:
        return text(value)
    return json.dumps(translated.query)


def _range(text: Text, value: Node, result: Arguments) -> int:
    """The `offset` that stands for the range's first row; reviews when columns move."""
    original = _literal(text, value)
    match = _RANGE.match(original or "")
    if original is None or match is None:
        result.reviews.append(
            "`range` is dropped: `listRows` returns whole rows from the first column and "
            "row, so check the row and column indexes this code reads"
        )
        return 0
    column, row = match.group(1), match.group(2)
    if column not in (None, "A"):
        result.reviews.append(
            f"the range {original!r} started at column {column}; each row's `values` now "
            f"start at column A, so shift the indexes this code reads"
        )
    return int(row) - 1 if row is not None and int(row) > 1 else 0


def _row(text: Text, value: Node, result: Arguments) -> str | None:
    """``values: [[a, b]]`` (one row) → ``[a, b]``; None (and a TODO) for several rows."""
    if value.type != "array":
        result.reviews.append(
            "`values` was a list of rows (`[[...]]`) in the original; `appendRow` takes one "
            "row (`[a, b]`): check what is passed"
        )
        return text(value)
    items = [c for c in value.named_children if c.type != "comment"]
    rows = [item for item in items if item.type == "array"]
    if not rows:
        return text(value)
    if len(items) == 1:
        return text(rows[0])
    result.todo = "appends several rows at once: call `ctx.sheets.appendRow` once per row"
    return None
