"""cached-external-data: external data read only when the handler's state does not have it yet.

What it does: warns about a connector read (``ctx.sheets.listRows``, ``ctx.gmail.search``,
...) that runs only when ``state`` lacks a value: ``state?.vips ?? await ctx.sheets.listRows(...)``,
``if (!state.vips) { vips = await ... }``, a conditional expression on ``state``. The
read's result is then kept in the state (returned by the producer or by ``next``).

Why is this bad? State lives as long as the workflow. Data read once and kept there is
never read again: a VIP added to the sheet next week is never seen, a removed one
stays. Read external data where it is used (in the producer, or in ``prepare``) on
every run; keep in state only what the workflow itself decides (a cursor, a count).
"""

from __future__ import annotations

from collections.abc import Iterator

import tree_sitter

from keep_sdk.model import HandlerPhase, OperationKind
from keep_sdk.validator._diagnostics import Severity
from keep_sdk.validator.facts import Analysis, CapabilityCall
from keep_sdk.validator.fields import Field
from keep_sdk.validator.rule import Finding, Related, Rule, RuleMeta
from keep_sdk.validator.rules._runs import identifiers, within
from keep_sdk.validator.rules._support import why

__all__ = ["rule"]

Node = tree_sitter.Node

META = RuleMeta(
    id="cached-external-data",
    severity=Severity.WARNING,
    description="External data is read only when the state lacks it, so it is never re-read.",
    rationale=why(__doc__),
    messages={
        "cached": (
            "`ctx.{target}` runs only when `{state}` lacks a value: what it reads is kept "
            "in the state and never read again, so later changes to it are missed"
        ),
    },
    hint=(
        "Read `ctx.{target}` on every run where it is used (in `prepare`, or in the "
        "producer) and pass it on through `prepared.data`; keep in the state only what "
        "the workflow decides itself (a cursor, a count)."
    ),
)

_READS = frozenset({OperationKind.READ, OperationKind.READ_BY_ID})
_PHASES = frozenset({HandlerPhase.PRODUCER, HandlerPhase.PREPARE})


def check(analysis: Analysis) -> Iterator[Finding]:
    """Reads guarded by a condition on the state, in producers and `prepare`."""
    for call in analysis.calls:
        if call.kind not in _READS or call.method is not None or call.via:
            continue
        if call.handler.phase not in _PHASES:
            continue
        state = _state_name(analysis, call.handler.node)
        if state is None:
            continue
        guard = _guard(analysis, call, state)
        if guard is not None:
            yield Finding(
                "cached",
                call.site,
                {"target": call.target, "state": state},
                call.handler,
                related=(Related(guard, f"the condition on `{state}`"),),
            )


def _state_name(analysis: Analysis, function: Node) -> str | None:
    parameters = function.child_by_field_id(Field.PARAMETERS)
    if parameters is None:
        return None
    names = [c for c in parameters.named_children if c.type != "comment"]
    if len(names) < 2 or names[1].type != "identifier":
        return None
    return analysis.text(names[1])


def _reads_state(analysis: Analysis, node: Node | None, state: str) -> bool:
    if node is None:
        return False
    return any(name == state for name, _ in identifiers(node, analysis.source.data))


def _has_read(analysis: Analysis, node: Node | None) -> bool:
    if node is None:
        return False
    return any(within(call.site, node) for call in analysis.calls)


def _guard(analysis: Analysis, call: CapabilityCall, state: str) -> Node | None:
    """The condition on `state` that decides whether `call` runs, if any."""
    current = call.site
    while current.parent is not None and current.id != call.handler.node.id:
        parent = current.parent
        if parent.type == "binary_expression":
            operator = parent.child_by_field_id(Field.OPERATOR)
            left = parent.child_by_field_id(Field.LEFT)
            right = parent.child_by_field_id(Field.RIGHT)
            if (
                operator is not None
                and analysis.text(operator) in ("??", "||")
                and right is not None
                and within(call.site, right)
                and _reads_state(analysis, left, state)
            ):
                return left
        if parent.type in ("if_statement", "ternary_expression"):
            condition = parent.child_by_field_id(Field.CONDITION)
            branches = [
                parent.child_by_field_id(Field.CONSEQUENCE),
                parent.child_by_field_id(Field.ALTERNATIVE),
            ]
            inside = [b for b in branches if b is not None and within(call.site, b)]
            others = [b for b in branches if b is not None and not within(call.site, b)]
            if (
                condition is not None
                and inside
                and not any(_has_read(analysis, other) for other in others)
                and _reads_state(analysis, condition, state)
            ):
                return condition
        current = parent
    return None


rule = Rule(META, check)
