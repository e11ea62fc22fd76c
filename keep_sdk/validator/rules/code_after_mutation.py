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
from keep_sdk.validator.facts import Analysis
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
            "this code can run after the mutation `ctx.{target}` (line {line}), but the "
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
            {"target": fact.mutation.target, "line": line_of(analysis, fact.mutation.site)},
            fact.handler,
        )


rule = Rule(META, check)
