"""Tree helpers shared by the run-to-run rules (values that cross runs or events)."""

from __future__ import annotations

from collections.abc import Iterator

import tree_sitter

from keep_sdk.validator.fields import Field

__all__ = ["bound_name", "descendants", "identifiers", "strip", "within"]

Node = tree_sitter.Node

_WRAPPERS = frozenset({"parenthesized_expression", "await_expression"})


def descendants(node: Node) -> Iterator[Node]:
    """`node` and every node below it, in source order (an explicit stack: no recursion)."""
    stack = [node]
    while stack:
        current = stack.pop()
        yield current
        stack.extend(reversed(current.named_children))


def identifiers(node: Node, data: bytes) -> Iterator[tuple[str, Node]]:
    """Each identifier below `node`, with its name."""
    for current in descendants(node):
        if current.type in ("identifier", "shorthand_property_identifier"):
            yield data[current.start_byte : current.end_byte].decode("utf-8", "replace"), current


def strip(node: Node) -> Node:
    """`node` without the parentheses and ``await`` around it."""
    while node.type in _WRAPPERS and node.named_child_count:
        node = node.named_children[-1]
    return node


def within(inner: Node, outer: Node) -> bool:
    """Whether `inner` lies inside `outer` (or is it)."""
    return outer.start_byte <= inner.start_byte and inner.end_byte <= outer.end_byte


def bound_name(expression: Node) -> Node | None:
    """The declarator's target when `expression` (through parentheses and ``await``) is
    the whole value of ``const x = ...`` / ``let [x] = ...``; else None."""
    node = expression
    while node.parent is not None and node.parent.type in _WRAPPERS:
        node = node.parent
    parent = node.parent
    if parent is None or parent.type != "variable_declarator":
        return None
    if parent.child_by_field_id(Field.VALUE) != node:
        return None
    return parent.child_by_field_id(Field.NAME)
