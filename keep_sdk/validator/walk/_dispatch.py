"""The tables that send each node type to the walk's handler for it.

Each part of the walk registers the handlers it implements here when it is
imported; `keep_sdk.validator.walker` imports every part before any walk
runs. A statement handler takes (walk, node, scope, state) and returns the
flow state after the statement; an expression handler returns the
expression's value and the flow state after it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import tree_sitter

from keep_sdk.validator.scope import Scope, Value
from keep_sdk.validator.walk.flow import Flow

__all__ = ["EXPRESSIONS", "STATEMENTS", "ExpressionHandler", "StatementHandler"]

Node = tree_sitter.Node
StatementHandler = Callable[[Any, Node, Scope, Flow], Flow]
ExpressionHandler = Callable[[Any, Node, Scope, Flow], tuple[Value | None, Flow]]

STATEMENTS: dict[str, StatementHandler] = {}
EXPRESSIONS: dict[str, ExpressionHandler] = {}
