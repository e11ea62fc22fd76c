"""analysis-limit: the analysis hit one of its budgets, so part of a handler went unchecked.

What it does: flags the point where the handler walk stopped following the
code: a helper call nested deeper than the walk follows, a handler whose walk
used up its step budget (the calls after that point are not followed),
functions created but never called nested deeper than the walk goes, and a
recursive call into a function that makes a mutation (the walk follows a
recursive function once, so it cannot tell how often the mutation runs), and
an expression or statement nested so deeply (inside the handler and the
helpers it calls) that the walk does not descend into it.

Why is this bad? The validator accepts a script only when every check covered
it. Past a budget the walk cannot tell whether the code it skipped calls a
second mutation, uses module state or calls an operation the phase forbids;
reporting "no problems" then would pass exactly what it could not read.
"""

from __future__ import annotations

from collections.abc import Iterator

from keep_sdk.validator._diagnostics import Severity
from keep_sdk.validator.facts import Analysis
from keep_sdk.validator.rule import Finding, Related, Rule, RuleMeta
from keep_sdk.validator.rules._support import through, why

__all__ = ["rule"]

META = RuleMeta(
    id="analysis-limit",
    severity=Severity.ERROR,
    description="The code is nested or branched too deeply for the validator to check it all.",
    rationale=why(__doc__),
    messages={
        "helper-depth": (
            "the validator stops following calls here: this call is nested more than {bound} "
            "functions deep{through}, so what it does is not checked"
        ),
        "steps": (
            "the validator gave up on this handler after {bound} steps: this call and the "
            "helper calls after it are not followed{through}"
        ),
        "rounds": (
            "functions created but never called are nested more than {bound} levels deep "
            "here, so this one is not checked"
        ),
        "nesting": (
            "the validator stops here: this code is nested more than {bound} expressions and "
            "statements deep{through}, so what it contains is not checked"
        ),
        "recursion": (
            "the validator follows a recursive function only once, and this recursive call "
            "re-enters a function that makes a mutation, so how often it runs is not "
            "checked{through}"
        ),
    },
    hint=(
        "Flatten the helpers: the validator follows at most {bound} nested function calls "
        "from a handler. Inline small helpers into their caller and call the rest directly "
        "from the handler, so that every call it can make is visible in a short chain."
    ),
    hints={
        "steps": (
            "Simplify the handler: fewer helper calls fanning out into further helper calls, "
            "fewer nested loops around them, and inline small helpers; move work that does not "
            "need ctx out of the handler's call chain."
        ),
        "recursion": (
            "Do not make mutations from recursive functions: compute what to do with a loop "
            "(or recursion that only reads data), then make the single mutation call directly."
        ),
        "nesting": (
            "Flatten the code: split deeply nested expressions into named intermediate "
            "constants, replace long chains of nested conditions with early returns or a "
            "lookup table, and keep each handler's helper chain short."
        ),
        "rounds": (
            "Flatten the nested functions: declare each function at the top of the script or "
            "inside the handler instead of returning functions from functions, and call what "
            "must run."
        ),
    },
)


def check(analysis: Analysis) -> Iterator[Finding]:
    """Every budget the walk hit."""
    for fact in analysis.limits:
        arguments = {"bound": fact.bound, "through": through(analysis, fact)}
        yield Finding(
            fact.limit,
            fact.node,
            arguments,
            fact.handler,
            related=(Related(fact.site, "the call in the handler that leads here"),)
            if fact.via
            else (),
        )


rule = Rule(META, check)
