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

from keep_sdk.model import HandlerPhase
from keep_sdk.validator.diagnostics import Severity
from keep_sdk.validator.facts import Analysis
from keep_sdk.validator.rule import Finding, Rule, RuleMeta
from keep_sdk.validator.rules._support import line_of, through, why

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
        "A consumer run performs at most one mutation. Choose the one item to act on in "
        "`prepare` (reserve only its event) and call the mutation once; the remaining events "
        "stay pending and the consumer runs again for each of them."
    ),
)


def check(analysis: Analysis) -> Iterator[Finding]:
    """Mutations in `mutate` after another on a path, repeated by a loop, or in callbacks."""
    for call in analysis.calls:
        if not call.is_mutation or call.detached or call.handler.phase is not HandlerPhase.MUTATE:
            continue
        arguments = {"target": call.target, "through": through(analysis, call)}
        if (call.in_callback and call.site.id == call.node.id) or (call.in_callback and call.via):
            yield Finding("callback", call.site, arguments, call.handler)
        elif call.after is not None and call.after.node.id == call.node.id:
            yield Finding("loop", call.site, arguments, call.handler)
        elif call.after is not None:
            yield Finding(
                "second",
                call.site,
                {
                    **arguments,
                    "first": call.after.target,
                    "line": line_of(analysis, call.after.site),
                },
                call.handler,
            )


rule = Rule(META, check)
