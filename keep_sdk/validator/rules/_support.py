"""Wording shared by the built-in rules."""

from __future__ import annotations

import difflib
from collections.abc import Iterable

import tree_sitter

from keep_sdk.model import HandlerPhase
from keep_sdk.validator.facts import (
    Analysis,
    AnalysisLimit,
    CapabilityCall,
    CodeAfterMutation,
    Handler,
    UndefinedName,
)
from keep_sdk.validator.rule import Related

__all__ = [
    "absorb_code_after",
    "call_key",
    "code_after_of",
    "helper_related",
    "in_order",
    "line_of",
    "phase_name",
    "suggestion",
    "through",
    "why",
]

CODE_AFTER_MUTATION = "code-after-mutation"

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


def through(analysis: Analysis, fact: CapabilityCall | AnalysisLimit | UndefinedName) -> str:
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


def call_key(call: CapabilityCall) -> tuple[int, int]:
    """One key per call as written: the same call reached twice (a loop, a helper called
    from one place) has one key; a helper's call reached from two places has two."""
    return call.site.id, call.node.id


def helper_related(
    fact: CapabilityCall | AnalysisLimit | UndefinedName, what: str
) -> tuple[Related, ...]:
    """For a fact inside a helper, the line in the helper as a related location: `what`
    followed by where it is (``in `notify```); nothing for a fact in the handler's own body."""
    if not fact.via:
        return ()
    chain = " → ".join(f"`{name}`" for name in fact.via)
    return (Related(fact.node, f"{what} in {chain}"),)


def code_after_of(
    analysis: Analysis, handler: Handler, keys: set[tuple[int, int]]
) -> list[CodeAfterMutation]:
    """The code-after-mutation facts of `handler` about the mutations with `keys`, in
    source order, one per statement."""
    seen: set[int] = set()
    facts: list[CodeAfterMutation] = []
    for fact in analysis.code_after_mutation:
        if fact.handler is handler and call_key(fact.mutation) in keys and fact.node.id not in seen:
            seen.add(fact.node.id)
            facts.append(fact)
    facts.sort(key=lambda fact: (fact.node.start_byte, fact.node.end_byte))
    return facts


def absorb_code_after(
    facts: list[CodeAfterMutation],
) -> tuple[tuple[Related, ...], tuple[tuple[str, tree_sitter.Node], ...]]:
    """Related locations for code that a misplaced mutation keeps from running, and the
    code-after-mutation findings at those places that the mutation's diagnostic stands for."""
    related = tuple(
        Related(fact.node, "code after the mutation, which never runs") for fact in facts
    )
    return related, tuple((CODE_AFTER_MUTATION, fact.node) for fact in facts)


def in_order(related: Iterable[Related]) -> tuple[Related, ...]:
    """`related` in source order, one per place (the first message given for it)."""
    places: dict[tuple[int, int], Related] = {}
    for item in related:
        places.setdefault((item.node.start_byte, item.node.end_byte), item)
    return tuple(places[place] for place in sorted(places))
