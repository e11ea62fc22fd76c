"""Flow states along the paths of a handler, and the frames and jump targets that carry them.

A flow state says what may already have run on the paths reaching a point:
``None`` (no path reaches it), ``False`` (no mutation yet), or the mutation
call that may have run on some path. `join` merges the states of two paths
and keeps a mutation when either path has one.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import tree_sitter

from keep_sdk.validator.facts import CapabilityCall
from keep_sdk.validator.scope import Value

__all__ = ["Flow", "Frame", "Target", "join"]

Node = tree_sitter.Node
Flow = CapabilityCall | bool | None


def join(a: Flow, b: Flow) -> Flow:
    """Merge the flow states of two paths."""
    if a is None:
        return b
    if b is None or b is False:
        return a
    if a is False:
        return b
    return a


@dataclass(eq=False, slots=True)
class Target:
    """Where ``break`` (and, for a loop, ``continue``) goes: the states that jump there."""

    label: str | None
    is_loop: bool
    breaks: list[Flow] = field(default_factory=list)
    continues: list[Flow] = field(default_factory=list)


@dataclass(eq=False, slots=True)
class Frame:
    """One function being walked: its node, the helpers followed to reach it, and its exits.

    `site` is the call in the handler's own body that led here (None in the
    handler itself); `returns` and `values` collect the states and values of
    its ``return`` statements; `targets` are the enclosing jump targets.
    """

    node: Node
    via: tuple[str, ...]
    site: Node | None
    returns: list[Flow] = field(default_factory=list)
    values: list[Value | None] = field(default_factory=list)
    targets: list[Target] = field(default_factory=list)
