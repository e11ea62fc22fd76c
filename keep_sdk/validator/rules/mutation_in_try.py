"""mutation-in-try: a mutation call inside try/catch/finally or with a ``.catch``.

What it does: flags a mutation in ``mutate`` that sits in a ``try`` block,
a ``catch`` or ``finally`` clause, or whose promise gets a rejection handler
(``.catch(...)`` or a second ``.then`` argument).

Why is this bad? Failures of a mutation are the host's to handle: a
transient failure is retried, an uncertain outcome is reconciled, a definite
failure is recorded. Catching it in the script cannot work (the call never
returns) and reads as if the script could recover or retry, which would
duplicate side effects.
"""

from __future__ import annotations

from collections.abc import Iterator

from keep_sdk.model import HandlerPhase
from keep_sdk.validator._diagnostics import Severity
from keep_sdk.validator.facts import Analysis
from keep_sdk.validator.rule import Finding, Rule, RuleMeta
from keep_sdk.validator.rules._support import (
    absorb_code_after,
    call_key,
    code_after_of,
    helper_related,
    in_order,
    through,
    why,
)

__all__ = ["rule"]

META = RuleMeta(
    id="mutation-in-try",
    severity=Severity.ERROR,
    description="A mutation call is wrapped in error handling, which cannot catch its outcome.",
    rationale=why(__doc__),
    messages={
        "caught": (
            "mutation `ctx.{target}` is inside try/catch/finally or has a rejection handler; "
            "its failures are handled by the host, not by the script{through}"
        ),
    },
    hint=(
        "Remove the try/catch (or `.catch`) around `ctx.{target}(...)` and call it as the last "
        "statement of `mutate`. Validate inputs in `prepare`; the host retries transient "
        "failures, reconciles uncertain ones, and `next` sees the outcome in `mutationResult`."
    ),
)


def check(analysis: Analysis) -> Iterator[Finding]:
    """Mutation calls in `mutate` under error handling, one finding per call as written.

    Code the walk found running after such a mutation (in the `catch`, after the
    `try`) is a related location, and its code-after-mutation finding is absorbed.
    """
    seen: set[tuple[int, int]] = set()
    for call in analysis.calls:
        if (
            call.is_mutation
            and call.in_try
            and not call.detached
            and call.handler.phase is HandlerPhase.MUTATE
            and call_key(call) not in seen
        ):
            seen.add(call_key(call))
            code_after, absorbs = absorb_code_after(
                code_after_of(analysis, call.handler, {call_key(call)})
            )
            yield Finding(
                "caught",
                call.site,
                {"target": call.target, "through": through(analysis, call)},
                call.handler,
                related=in_order([*helper_related(call, f"`ctx.{call.target}`"), *code_after]),
                absorbs=absorbs,
            )


rule = Rule(META, check)
