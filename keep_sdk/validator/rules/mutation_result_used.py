"""mutation-result-used: ``mutate`` uses the value a mutation call returns.

What it does: flags a mutation call in ``mutate`` whose result is stored,
passed on, combined or read (``const row = await ctx.sheets.appendRow(...)``,
``.then(result => ...)``). ``return await ctx.x.y(...)`` and a bare
``await ctx.x.y(...)`` are fine.

Why is this bad? The host never returns the mutation's result to ``mutate``:
the call is terminal. The result reaches ``next`` as
``mutationResult.result`` once the host recorded it in the ledger.
"""

from __future__ import annotations

from collections.abc import Iterator

from keep_sdk.model import HandlerPhase
from keep_sdk.validator._diagnostics import Severity
from keep_sdk.validator.facts import Analysis
from keep_sdk.validator.rule import Finding, Related, Rule, RuleMeta
from keep_sdk.validator.rules._support import (
    absorb_code_after,
    call_key,
    code_after_of,
    helper_related,
    in_order,
    why,
)

__all__ = ["rule"]

META = RuleMeta(
    id="mutation-result-used",
    severity=Severity.ERROR,
    description="`mutate` uses the value a mutation call returns, which it never receives.",
    rationale=why(__doc__),
    messages={
        "used": (
            "the result of mutation `ctx.{target}` is used here, but `mutate` never receives "
            "it: the call is terminal"
        ),
    },
    hint=(
        "Write the call as a statement (`await ctx.{target}({{...}});`) and read its result in "
        '`next(ctx, prepared, mutationResult)`: `if (mutationResult.status === "applied") '
        "{{ const result = mutationResult.result; ... }}`."
    ),
)


def check(analysis: Analysis) -> Iterator[Finding]:
    """Mutation calls in `mutate` whose value flows anywhere, one finding per use.

    The call is a related location when the use is elsewhere; code the walk
    found running after the mutation (typically what reads the result) is one
    too, and its code-after-mutation finding is absorbed.
    """
    seen: set[int] = set()
    for call in analysis.calls:
        use = call.result_use
        if (
            call.is_mutation
            and use is not None
            and not call.detached
            and call.handler.phase is HandlerPhase.MUTATE
            and use.id not in seen
        ):
            seen.add(use.id)
            code_after, absorbs = absorb_code_after(
                code_after_of(analysis, call.handler, {call_key(call)})
            )
            related = [
                Related(call.site, f"the mutation `ctx.{call.target}`"),
                *helper_related(call, f"`ctx.{call.target}`"),
                *code_after,
            ]
            yield Finding(
                "used",
                use,
                {"target": call.target},
                call.handler,
                related=in_order(related),
                absorbs=absorbs,
            )


rule = Rule(META, check)
