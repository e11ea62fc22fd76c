"""undefined-name: a handler reads a name that is not declared where it is read.

What it does: flags a read of a name that no enclosing scope declares and the
sandbox does not define, though the script declares it somewhere else: a
parameter of another handler (``state`` in ``next``), a variable local to
another function, a name declared in a block that has ended. A name the
script declares nowhere is ``forbidden-global`` instead.

Why is this bad? The read is a ``ReferenceError`` when the line runs. In
``next`` that is after the mutation was made: the run fails with its events
reserved and needs a person, although nothing was wrong with the mutation.
"""

from __future__ import annotations

from collections.abc import Iterator

from keep_sdk.model import HandlerPhase
from keep_sdk.validator._diagnostics import Severity
from keep_sdk.validator.facts import Analysis
from keep_sdk.validator.rule import Finding, Rule, RuleMeta
from keep_sdk.validator.rules._support import helper_related, phase_name, through, why

__all__ = ["rule"]

_PARAMETERS = {
    HandlerPhase.PRODUCER: "(ctx, state)",
    HandlerPhase.PREPARE: "(ctx, state)",
    HandlerPhase.MUTATE: "(ctx, prepared)",
    HandlerPhase.NEXT: "(ctx, prepared, mutationResult)",
}

META = RuleMeta(
    id="undefined-name",
    severity=Severity.ERROR,
    description="A handler reads a name that is not declared where it is read.",
    rationale=why(__doc__),
    messages={
        "undefined": (
            "`{name}` is not declared here{through}: reading it is a ReferenceError when "
            "{phase} runs ({phase} receives `{parameters}`)"
        ),
    },
    hint=(
        "Declare `{name}` in the function that reads it, or take the value from the "
        "handler's parameters `{parameters}`: `prepare` passes data on to `mutate` and "
        "`next` as `prepared.data`, and producers and `prepare` read their state from `state`."
    ),
)


def check(analysis: Analysis) -> Iterator[Finding]:
    """Every read of a name declared elsewhere but not in scope where it is read."""
    for fact in analysis.undefined_names:
        arguments = {
            "name": fact.name,
            "through": through(analysis, fact),
            "phase": phase_name(fact.handler.phase),
            "parameters": _PARAMETERS[fact.handler.phase],
        }
        yield Finding(
            "undefined",
            fact.site if fact.via else fact.node,
            arguments,
            fact.handler,
            related=helper_related(fact, f"the read of `{fact.name}`"),
        )


rule = Rule(META, check)
