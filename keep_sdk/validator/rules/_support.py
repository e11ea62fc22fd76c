"""Wording shared by the built-in rules."""

from __future__ import annotations

import difflib
from collections.abc import Iterable

import tree_sitter

from keep_sdk.model import HandlerPhase
from keep_sdk.validator.facts import Analysis, AnalysisLimit, CapabilityCall

__all__ = ["line_of", "phase_name", "suggestion", "through", "why"]

_PHASE_NAMES = {
    HandlerPhase.PRODUCER: "a producer",
    HandlerPhase.PREPARE: "`prepare`",
    HandlerPhase.MUTATE: "`mutate`",
    HandlerPhase.NEXT: "`next`",
}


def phase_name(phase: HandlerPhase) -> str:
    """How messages name a phase: "a producer", "`prepare`"..."""
    return _PHASE_NAMES[phase]


def suggestion(name: str, candidates: Iterable[str]) -> str:
    """`` (did you mean `x`?)`` for the closest candidate, or an empty string."""
    close = difflib.get_close_matches(name, list(candidates), n=1, cutoff=0.6)
    return f" (did you mean `{close[0]}`?)" if close else ""


def line_of(analysis: Analysis, node: tree_sitter.Node) -> int:
    """1-based line of `node`."""
    return analysis.source.position(node.start_byte)[0]


def through(analysis: Analysis, fact: CapabilityCall | AnalysisLimit) -> str:
    """`` (in `helper` at line M, called at line N)`` for facts inside helpers, else "".

    Names both places whichever one the finding is reported at: the line in the
    helper where the problem is (M) and the call in the handler that reaches it (N).
    """
    if not fact.via:
        return ""
    chain = " → ".join(f"`{name}`" for name in fact.via)
    inner, outer = line_of(analysis, fact.node), line_of(analysis, fact.site)
    return f" (in {chain} at line {inner}, called at line {outer})"


def why(doc: str | None) -> str:
    """The "Why is this bad?" paragraph of a rule module's docstring, on one line."""
    text = doc or ""
    _, _, after = text.partition("Why is this bad?")
    return " ".join(after.split())
