"""dynamic-capability: a use of ``ctx`` that static checks cannot follow.

What it does: flags computed access (``ctx[name]``, ``ctx.gmail[op]``),
``ctx`` or a connector or operation taken from it passed to code the analysis
cannot see, stored in an object or array, spread or collected with
``...rest``, and reassigning ``ctx``, its members or an alias of them.
Passing ``ctx`` to a function declared in the script is fine: the analysis
follows it.

Why is this bad? Every other check (phases, one terminal mutation, topics)
depends on knowing which operation each call reaches. Code the validator
cannot follow could do anything the phase allows, and it is the runtime that
fails.
"""

from __future__ import annotations

from collections.abc import Iterator

from keep_sdk.validator._diagnostics import Severity
from keep_sdk.validator.facts import Analysis
from keep_sdk.validator.rule import Finding, Rule, RuleMeta
from keep_sdk.validator.rules._support import why
from keep_sdk.validator.vocabulary import WalkVocabulary

__all__ = ["INSPECTING_GLOBALS", "VOCABULARY", "rule"]

INSPECTING_GLOBALS = frozenset({"console"})
"""Globals whose methods only read their arguments: passing ctx to them lets nothing escape."""

VOCABULARY = WalkVocabulary(inspecting_globals=INSPECTING_GLOBALS)
"""The walk does not record ctx handed to these globals' methods as escaping."""

META = RuleMeta(
    id="dynamic-capability",
    severity=Severity.ERROR,
    description="`ctx` is used in a way that static checks cannot follow.",
    rationale=why(__doc__),
    messages={
        "computed": "computed access on `{what}` cannot be checked; name the member directly",
        "escapes": (
            "`{what}` is passed where the validator cannot follow it (to unknown code, into "
            "an object or array, or spread)"
        ),
        "reassigned": "`{what}` or one of its members is reassigned",
        "returned": (
            "`{what}` is returned from a function the validator does not follow to its callers "
            "(a getter, a method stored in an object, or a callback)"
        ),
        "rest": "`...rest` of `{what}` collects capabilities the validator cannot follow",
    },
    hint=(
        "Call operations directly as `ctx.<connector>.<operation>(...)` (destructuring "
        "`const {{ sheets }} = ctx` and helpers declared in this script with `function` or "
        "`const` are fine). "
        "Do not index ctx with variables, store it in objects, spread it, or assign to it."
    ),
    hints={
        "returned": (
            "Do not hand out capabilities through getters or functions stored in objects: call "
            "`ctx.<connector>.<operation>(...)` where it is needed, or pass `ctx` to a helper "
            "function declared in this script with `function` or `const`."
        ),
        "computed": (
            "Replace the computed access with a literal member, e.g. branch with if/else and "
            "call `ctx.gmail.send(...)` or `ctx.slack.postMessage(...)` explicitly."
        ),
    },
)


def check(analysis: Analysis) -> Iterator[Finding]:
    """Each dynamic use of ctx the walk met."""
    for fact in analysis.dynamic:
        yield Finding(fact.reason, fact.node, {"what": fact.what}, fact.handler)


rule = Rule(META, check, VOCABULARY)
