"""nondeterministic-mutate: ``Date``, ``Math.random`` and similar inside ``mutate``.

What it does: warns about the current time (``Date.now()``, ``new Date()``,
``Date()``, ``performance.now()``) and randomness (``Math.random()``,
``crypto.randomUUID()``) used in ``mutate`` or in helpers it calls.

Why is this bad? ``mutate`` must be a deterministic function of
``prepared.data``: when it re-runs after a failure, or when a person approves
the pending mutation, it must make the same call. Compute times and random
values in ``prepare`` and pass them in ``data``.
"""

from __future__ import annotations

from collections.abc import Iterator

from keep_sdk.model import HandlerPhase
from keep_sdk.validator._diagnostics import Severity
from keep_sdk.validator.facts import Analysis, GlobalUseKind
from keep_sdk.validator.rule import Finding, Related, Rule, RuleMeta
from keep_sdk.validator.rules._support import line_of, why
from keep_sdk.validator.vocabulary import WalkVocabulary

__all__ = ["NONDETERMINISTIC_CALLS", "NONDETERMINISTIC_CONSTRUCTIONS", "VOCABULARY", "rule"]

NONDETERMINISTIC_CALLS = frozenset(
    {"Date", "Date.now", "Math.random", "performance.now", "crypto.randomUUID"}
)
"""Global functions whose result depends on the clock or on randomness."""
NONDETERMINISTIC_CONSTRUCTIONS = frozenset({"Date"})
"""Globals whose construction without arguments reads the clock (``new Date()``)."""

VOCABULARY = WalkVocabulary(
    calls=dict.fromkeys(NONDETERMINISTIC_CALLS, GlobalUseKind.NONDETERMINISTIC),
    constructions=dict.fromkeys(NONDETERMINISTIC_CONSTRUCTIONS, GlobalUseKind.NONDETERMINISTIC),
)
"""The walk records these calls as nondeterministic `GlobalUse` facts."""

META = RuleMeta(
    id="nondeterministic-mutate",
    severity=Severity.WARNING,
    description="`mutate` uses the clock or randomness, so re-running it can change the call.",
    rationale=why(__doc__),
    messages={
        "nondeterministic": "`{name}` in `mutate` makes the mutation nondeterministic",
        "in-helper": (
            "this call runs `{name}` (in {helpers} at line {line}), which makes the mutation "
            "nondeterministic"
        ),
    },
    hint=(
        "Compute the value in `prepare` (e.g. `data: {{ sentAt: new Date().toISOString() }}`) "
        "and use `prepared.data.sentAt` in `mutate`."
    ),
)


def check(analysis: Analysis) -> Iterator[Finding]:
    """Nondeterministic sources reached from `mutate`, reported in `mutate`: at the use,
    or at the call of the helper that makes it (the use in the helper is related)."""
    for use in analysis.globals:
        handler = use.handler
        if use.kind is not GlobalUseKind.NONDETERMINISTIC or handler is None:
            continue
        if handler.phase is not HandlerPhase.MUTATE:
            continue
        name = use.name if use.name == "new Date()" else f"{use.name}()"
        if not use.via or use.site is None:
            yield Finding("nondeterministic", use.node, {"name": name}, handler)
            continue
        helpers = " → ".join(f"`{helper}`" for helper in use.via)
        arguments = {"name": name, "helpers": helpers, "line": line_of(analysis, use.node)}
        related = (Related(use.node, f"`{name}` in {helpers}"),)
        yield Finding("in-helper", use.site, arguments, handler, related=related)


rule = Rule(META, check, VOCABULARY)
