"""multiple-mutations: more than one mutation can run in one ``mutate``.

What it does: flags a mutation call that can run after another mutation on
the same path (two calls in sequence, ``Promise.all`` over several), a mutation
inside a loop that can repeat it, and a mutation inside a callback
(``items.forEach(...)``, ``items.map(...)``) that may run any number of times.
Helpers called from ``mutate`` count at the call site.

Why is this bad? A consumer run performs at most one external mutation: the
ledger, approvals and reconciliation track exactly one. The host executes the
first and drops the rest, so the others silently never happen.
"""

from __future__ import annotations

from collections.abc import Iterator

import tree_sitter

from keep_sdk.model import HandlerPhase
from keep_sdk.validator._diagnostics import Severity
from keep_sdk.validator.facts import Analysis, CapabilityCall
from keep_sdk.validator.rule import Finding, Related, Rule, RuleMeta
from keep_sdk.validator.rules._support import (
    absorb_code_after,
    call_key,
    code_after_of,
    helper_related,
    in_order,
    line_of,
    through,
    why,
)

__all__ = ["rule"]

META = RuleMeta(
    id="multiple-mutations",
    severity=Severity.ERROR,
    description="More than one mutation can run in a single `mutate`.",
    rationale=why(__doc__),
    messages={
        "second": (
            "mutation `ctx.{target}` can run after the mutation `ctx.{first}` (line {line}) "
            "on the same path{through}"
        ),
        "loop": "mutation `ctx.{target}` is inside a loop, so it can run more than once{through}",
        "callback": (
            "mutation `ctx.{target}` is inside a callback, which may run any number of "
            "times{through}"
        ),
    },
    hint=(
        "A consumer run performs at most one mutation. For several items, act on one per "
        "run: peek with `{{ limit: 1 }}` in `prepare`, reserve only its event and call the "
        "mutation once; the other events stay pending and the consumer runs again for each. "
        'For "do A, then B": make A here, publish an event from `next` (with what B '
        "needs), and let a second consumer subscribed to that topic make B in its `mutate`."
    ),
)


def check(analysis: Analysis) -> Iterator[Finding]:
    """One finding per group of mutations in `mutate` that can follow one another.

    Mutations join a group when one can run after another (in sequence, around a
    loop, through helpers); a mutation repeated by a loop or a callback is a
    group of its own. The group's first repeated call (in source order) is the
    finding; the others, the first mutation and the lines inside helpers are
    related locations, and the code-after-mutation findings about the group's
    mutations are absorbed.
    """
    repeated: dict[tuple[int, int], tuple[str, CapabilityCall]] = {}
    calls: dict[tuple[int, int], CapabilityCall] = {}
    parent: dict[tuple[int, int], tuple[int, int]] = {}

    def root(key: tuple[int, int]) -> tuple[int, int]:
        while parent.setdefault(key, key) != key:
            key = parent[key]
        return key

    for call in analysis.calls:
        if not call.is_mutation or call.detached or call.handler.phase is not HandlerPhase.MUTATE:
            continue
        key = call_key(call)
        if (call.in_callback and call.site.id == call.node.id) or (call.in_callback and call.via):
            repeated.setdefault(key, ("callback", call))
        elif call.after is not None and call_key(call.after) == key:
            repeated.setdefault(key, ("loop", call))
        elif call.after is not None:
            repeated.setdefault(key, ("second", call))
            first = call_key(call.after)
            calls.setdefault(first, call.after)
            a, b = root(key), root(first)
            if a != b:
                parent[b] = a
        calls.setdefault(key, call)
    groups: dict[tuple[int, int], list[tuple[int, int]]] = {}
    for key in calls:
        groups.setdefault(root(key), []).append(key)
    for keys in groups.values():
        extras = [key for key in keys if key in repeated]
        if not extras:
            continue
        keys.sort(key=lambda key: _order(calls[key]))
        extras.sort(key=lambda key: _order(calls[key]))
        message_id, primary = repeated[extras[0]]
        yield _finding(analysis, message_id, primary, [calls[key] for key in keys], repeated)


def _contains(outer: tree_sitter.Node, inner: tree_sitter.Node) -> bool:
    return outer.start_byte <= inner.start_byte and inner.end_byte <= outer.end_byte


def _order(call: CapabilityCall) -> tuple[int, int]:
    return call.site.start_byte, call.node.start_byte


def _finding(
    analysis: Analysis,
    message_id: str,
    primary: CapabilityCall,
    members: list[CapabilityCall],
    repeated: dict[tuple[int, int], tuple[str, CapabilityCall]],
) -> Finding:
    arguments = {"target": primary.target, "through": through(analysis, primary)}
    if message_id == "second":
        assert primary.after is not None
        arguments["first"] = primary.after.target
        first = primary.after
        same_site = first.site.id == primary.site.id
        arguments["line"] = str(line_of(analysis, first.node if same_site else first.site))
    related: list[Related] = list(helper_related(primary, f"`ctx.{primary.target}`"))
    for call in members:
        key = call_key(call)
        if key == call_key(primary):
            continue
        if key not in repeated:
            what = f"the first mutation, `ctx.{call.target}`"
        elif repeated[key][0] == "loop":
            what = f"`ctx.{call.target}`, which a loop can repeat"
        else:
            what = f"`ctx.{call.target}`, which can run after another mutation"
        if call.site.id != primary.site.id:
            chain = " → ".join(f"`{name}`" for name in call.via)
            related.append(Related(call.site, f"{what} through {chain}" if chain else what))
        else:
            related.extend(helper_related(call, what))
    facts = code_after_of(analysis, primary.handler, {call_key(call) for call in members})
    code_after, absorbs = absorb_code_after(facts)
    sites = [call.site for call in members]
    related.extend(
        item for item in code_after if not any(_contains(item.node, site) for site in sites)
    )
    return Finding(
        message_id,
        primary.site,
        arguments,
        primary.handler,
        related=in_order(related),
        absorbs=absorbs,
    )


rule = Rule(META, check)
