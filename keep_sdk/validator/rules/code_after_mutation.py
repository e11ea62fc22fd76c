"""code-after-mutation: code in ``mutate`` that can run after the mutation call.

What it does: follows every path through ``mutate`` (branches, loops,
switch, try/finally, early returns, ``.then`` callbacks and helper functions)
and flags the first statement on each path that can run once a mutation was
called. A bare ``return;`` and ``break`` are not code.

Why is this bad? The mutation call is terminal: the host takes over at that
call and never returns control to the script. Anything after it never runs:
logging, bookkeeping or a second step silently disappear.
"""

from __future__ import annotations

from collections.abc import Iterator

from keep_sdk.validator._diagnostics import Severity
from keep_sdk.validator.facts import Analysis, CapabilityCall, CodeAfterMutation
from keep_sdk.validator.rule import Finding, Related, Rule, RuleMeta
from keep_sdk.validator.rules._support import call_key, helper_related, in_order, line_of, why

__all__ = ["rule"]

META = RuleMeta(
    id="code-after-mutation",
    severity=Severity.ERROR,
    description="Code in `mutate` can run after the mutation call, which is terminal.",
    rationale=why(__doc__),
    messages={
        "after": (
            "this code can run after the mutation `ctx.{target}` ({where}), but the "
            "mutation call is terminal: it never runs"
        ),
    },
    hint=(
        "Make `ctx.{target}(...)` the last statement of `mutate` on every path. Move "
        "preparation before it (or into `prepare`), and move follow-up work (logging, "
        "publishing, state) into `next`, which receives the result as `mutationResult`."
    ),
)


def check(analysis: Analysis) -> Iterator[Finding]:
    """One finding per group of code-after facts that share a statement or a mutation.

    The group's first statement is the finding; the other statements, the
    mutations they follow and the lines inside helpers are its related locations.
    """
    groups: dict[object, list[CodeAfterMutation]] = {}
    parent: dict[object, object] = {}

    def root(key: object) -> object:
        while parent.setdefault(key, key) != key:
            key = parent[key]
        return key

    for fact in analysis.code_after_mutation:
        a, b = root(("node", fact.node.id)), root(("call", call_key(fact.mutation)))
        if a != b:
            parent[b] = a
    for fact in analysis.code_after_mutation:
        groups.setdefault(root(("node", fact.node.id)), []).append(fact)
    for facts in groups.values():
        facts.sort(key=lambda fact: (fact.node.start_byte, -fact.node.end_byte))
        first = facts[0]
        related: list[Related] = []
        seen_nodes = {first.node.id}
        seen_calls: set[tuple[int, int]] = set()
        for fact in facts:
            key = call_key(fact.mutation)
            if key not in seen_calls:
                seen_calls.add(key)
                related.append(
                    Related(fact.mutation.site, f"the mutation `ctx.{fact.mutation.target}`")
                )
                related.extend(helper_related(fact.mutation, f"`ctx.{fact.mutation.target}`"))
            if fact.node.id not in seen_nodes:
                seen_nodes.add(fact.node.id)
                related.append(Related(fact.node, "more code that can run after the mutation"))
        yield Finding(
            "after",
            first.node,
            {"target": first.mutation.target, "where": _where(analysis, first.mutation)},
            first.handler,
            related=in_order(related),
        )


def _where(analysis: Analysis, mutation: CapabilityCall) -> str:
    """``line N``, or for a mutation made in a helper where it is and the call that reaches it."""
    site = line_of(analysis, mutation.site)
    if not mutation.via:
        return f"line {site}"
    chain = " → ".join(f"`{name}`" for name in mutation.via)
    return f"in {chain} at line {line_of(analysis, mutation.node)}, called at line {site}"


rule = Rule(META, check)
