"""The walk's budgets, and the `AnalysisLimit` fact recorded where it hits one.

Past a budget the walk stops following the code: `invoke` does not walk a
helper nested deeper than `MAX_HELPER_DEPTH` functions or called after the
handler's walk took `STEP_BUDGET` steps, `expr` and `statement` do not walk
a node nested more than `MAX_NESTING` levels deep (so the walk's recursion
stays far below Python's recursion limit), and the driver walks functions
created but never called for at most `MAX_ROUNDS` rounds. A recursive call
is never walked again, so when the function it re-enters makes a mutation the
number of mutations is unknown. Whatever stops the walk is recorded once per
handler and budget, so the script fails closed (rule ``analysis-limit``)
instead of passing unread.
"""

from __future__ import annotations

import tree_sitter

from keep_sdk.validator.facts import AnalysisLimit, LimitKind
from keep_sdk.validator.walk._state import WalkState

__all__ = ["MAX_HELPER_DEPTH", "MAX_NESTING", "MAX_ROUNDS", "STEP_BUDGET", "Limits"]

Node = tree_sitter.Node

MAX_HELPER_DEPTH = 12
"""Functions walked inside one another beyond the handler itself."""
STEP_BUDGET = 200_000
"""Statements and expressions one handler's walk may visit before it stops following calls."""
MAX_ROUNDS = 50
"""Rounds over functions created but never called (one nesting level per round)."""
MAX_NESTING = 120
"""Expressions and statements walked inside one another, helpers' bodies included.

Each level costs the walk at most about five Python frames, so the deepest
walk stays below 700 frames whatever the script.
"""
"""Rounds over functions created but never called (one nesting level per round)."""


class Limits(WalkState):
    """Recording where the walk stopped."""

    def limit(self, node: Node, limit: LimitKind, bound: int) -> None:
        if limit in self.limited:
            return
        self.limited.add(limit)
        site = self.site(node) if self.frames else node
        via = self.frame.via if self.frames else ()
        self.analysis.limits.append(AnalysisLimit(self.handler, node, site, via, limit, bound))
