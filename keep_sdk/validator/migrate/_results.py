"""Where a rewritten call's result is used, follow its new shape.

The old tools returned objects (``{messages: [...]}``, ``{values: [[...]]}``); the
operations here return other shapes (an array of messages, an array of ``{rowId,
values}``). A use whose translation is certain is rewritten (``list.messages || []``
→ ``list``, ``res.values`` → ``res.map((r) => r.values)``); any other use of the
result gets a ``TODO(migrate)`` naming both shapes.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass

import tree_sitter

from keep_sdk.validator.fields import Field
from keep_sdk.validator.migrate._tools import ResultShape

__all__ = ["ResultEdit", "ResultUse", "result_edits"]

Node = tree_sitter.Node

_FUNCTIONS = frozenset(
    {
        "arrow_function",
        "function_expression",
        "function",
        "method_definition",
        "function_declaration",
    }
)
_EMPTY_DEFAULTS = frozenset({"[]", "[ ]"})


@dataclass(frozen=True)
class ResultEdit:
    """Replace bytes ``start..end`` with `text`."""

    start: int
    end: int
    text: str


@dataclass(frozen=True)
class ResultUse:
    """A use of the result that cannot be translated for certain: a TODO at `node`."""

    node: Node
    message: str


def _unwrapped(
    node: Node, shape: ResultShape, text: Callable[[Node], str]
) -> tuple[Node, str] | None:
    """For ``X.p``, ``X?.p``, ``X.p || []`` or ``X.p ?? []`` where ``p`` is unwrapped
    by `shape`: the outermost of these nodes and the suffix that replaces ``.p``."""
    parent = node.parent
    if parent is None or parent.type != "member_expression":
        return None
    if parent.child_by_field_id(Field.OBJECT) != node:
        return None
    prop = parent.child_by_field_id(Field.PROPERTY)
    if prop is None or prop.type != "property_identifier":
        return None
    suffix = dict(shape.unwrap).get(text(prop))
    if suffix is None:
        return None
    outer = parent
    while outer.parent is not None and outer.parent.type == "parenthesized_expression":
        outer = outer.parent
    grand = outer.parent
    if grand is not None and grand.type == "binary_expression":
        operator = grand.child_by_field_id(Field.OPERATOR)
        right = grand.child_by_field_id(Field.RIGHT)
        if (
            grand.child_by_field_id(Field.LEFT) == outer
            and operator is not None
            and text(operator) in ("||", "??")
            and right is not None
            and text(right).strip() in _EMPTY_DEFAULTS
        ):
            return grand, suffix
    return parent, suffix


def _is_member_with(node: Node, names: tuple[str, ...], text: Callable[[Node], str]) -> bool:
    parent = node.parent
    if parent is None or parent.type != "member_expression":
        return False
    prop = parent.child_by_field_id(Field.PROPERTY)
    return (
        parent.child_by_field_id(Field.OBJECT) == node and prop is not None and text(prop) in names
    )


def _identifiers(root: Node, name: str, text: Callable[[Node], str]) -> Iterator[Node]:
    stack = [root]
    while stack:
        node = stack.pop()
        if node.type == "identifier" and text(node) == name:
            yield node
        stack.extend(reversed(node.children))


def _scope(node: Node) -> Node | None:
    current = node.parent
    while current is not None:
        if current.type in _FUNCTIONS or current.type == "program":
            return current.child_by_field_id(Field.BODY) or current
        current = current.parent
    return None


def _shape_message(what: str, shape: ResultShape) -> str:
    return f"review: {what} was {shape.old}, is now {shape.new}: rewrite this use"


def result_edits(
    call: Node, target: str, shape: ResultShape, text: Callable[[Node], str]
) -> tuple[list[ResultEdit], list[ResultUse]]:
    """The edits that follow `call`'s new result shape, and the uses left for a person."""
    expression = call
    if expression.parent is not None and expression.parent.type == "await_expression":
        expression = expression.parent
    holder = expression.parent
    while holder is not None and holder.type == "parenthesized_expression":
        holder = holder.parent
    if holder is None or holder.type == "expression_statement":
        return [], []
    direct = expression
    while direct.parent is not None and direct.parent.type == "parenthesized_expression":
        direct = direct.parent
    if direct is not expression:
        found = _unwrapped(direct, shape, text)
        if found is not None:
            outer, suffix = found
            return [ResultEdit(direct.end_byte, outer.end_byte, suffix)], []
        if _is_member_with(direct, shape.same, text):
            return [], []
    if holder.type == "variable_declarator" and holder.child_by_field_id(Field.VALUE) in (
        expression,
        direct,
    ):
        name = holder.child_by_field_id(Field.NAME)
        if name is not None and name.type == "identifier":
            return _uses(name, target, shape, text)
        if name is not None and name.type == "object_pattern":
            edits = _destructured(name, expression, shape, text)
            if edits is not None:
                return edits, []
        return [], [ResultUse(holder, _shape_message(f"the result of `ctx.{target}`", shape))]
    if holder.type == "assignment_expression":
        name = holder.child_by_field_id(Field.LEFT)
        if name is not None and name.type == "identifier":
            return _uses(name, target, shape, text)
    return [], [ResultUse(call, _shape_message(f"the result of `ctx.{target}`", shape))]


def _uses(
    name: Node, target: str, shape: ResultShape, text: Callable[[Node], str]
) -> tuple[list[ResultEdit], list[ResultUse]]:
    scope = _scope(name)
    if scope is None:
        return [], []
    variable = text(name)
    edits: list[ResultEdit] = []
    left: list[ResultUse] = []
    for use in _identifiers(scope, variable, text):
        if use.start_byte <= name.start_byte < use.end_byte or use.end_byte <= name.start_byte:
            continue
        found = _unwrapped(use, shape, text)
        if found is not None:
            outer, suffix = found
            edits.append(ResultEdit(use.start_byte, outer.end_byte, variable + suffix))
            continue
        if _is_member_with(use, shape.same, text):
            continue
        left.append(ResultUse(use, _shape_message(f"`{variable}` (from `ctx.{target}`)", shape)))
    return edits, left


def _destructured(
    pattern: Node, expression: Node, shape: ResultShape, text: Callable[[Node], str]
) -> list[ResultEdit] | None:
    """``const { messages } = await call`` → ``const messages = await call``; None when
    the pattern is anything else."""
    parts = [c for c in pattern.named_children if c.type != "comment"]
    if len(parts) != 1:
        return None
    part = parts[0]
    unwrap = dict(shape.unwrap)
    if part.type == "object_assignment_pattern":
        default = part.child_by_field_id(Field.RIGHT)
        if default is None or text(default).strip() not in _EMPTY_DEFAULTS:
            return None
        part = part.child_by_field_id(Field.LEFT) or part
    if part.type == "shorthand_property_identifier_pattern":
        key, variable = text(part), text(part)
    elif part.type == "pair_pattern":
        key_node = part.child_by_field_id(Field.KEY)
        value = part.child_by_field_id(Field.VALUE)
        if key_node is None or value is None or value.type != "identifier":
            return None
        key, variable = text(key_node), text(value)
    else:
        return None
    suffix = unwrap.get(key)
    if suffix is None:
        return None
    edits = [ResultEdit(pattern.start_byte, pattern.end_byte, variable)]
    if suffix:
        edits.append(ResultEdit(expression.start_byte, expression.start_byte, "("))
        edits.append(ResultEdit(expression.end_byte, expression.end_byte, ")" + suffix))
    return edits
