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

from keep_sdk.validator.diagnostics import Severity
from keep_sdk.validator.facts import Analysis, CapabilityCall
from keep_sdk.validator.rule import Finding, Rule, RuleMeta
from keep_sdk.validator.rules._support import line_of, why

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
    """Each statement the walk found running after a mutation in `mutate`."""
    for fact in analysis.code_after_mutation:
        yield Finding(
            "after",
            fact.node,
            {"target": fact.mutation.target, "where": _where(analysis, fact.mutation)},
            fact.handler,
        )


def _where(analysis: Analysis, mutation: CapabilityCall) -> str:
    """``line N``, or for a mutation made in a helper where it is and the call that reaches it."""
    site = line_of(analysis, mutation.site)
    if not mutation.via:
        return f"line {site}"
    chain = " → ".join(f"`{name}`" for name in mutation.via)
    return f"in {chain} at line {line_of(analysis, mutation.node)}, called at line {site}"


rule = Rule(META, check)
