"""phase-forbidden-call: an operation that the handler's phase does not allow.

What it does: checks every ``ctx`` call against the phase table: connector
reads in producers and ``prepare`` only (read-by-id also in ``mutate`` when the
host policy says ``mutate_reads="by_id"``), mutations in ``mutate`` only,
``ctx.peek``/``ctx.getByIds`` in ``prepare`` only, ``ctx.publish`` in producers
and ``next`` only. Calls inside helper functions count in the phase of the
handler that calls the helper.

Why is this bad? The host builds a new ``ctx`` per phase and refuses anything
else at call time: the run fails with a logic error. Worse, a mutation outside
``mutate`` would escape the ledger, approvals and reconciliation.
"""

from __future__ import annotations

from collections.abc import Iterator

from keep_sdk.contract.phases import MutateReads, allowed_phases
from keep_sdk.model import HandlerPhase
from keep_sdk.validator._diagnostics import Severity
from keep_sdk.validator.facts import Analysis, CapabilityCall
from keep_sdk.validator.rule import Finding, Rule, RuleMeta
from keep_sdk.validator.rules._support import helper_related, phase_name, through, why

__all__ = ["rule"]

META = RuleMeta(
    id="phase-forbidden-call",
    severity=Severity.ERROR,
    description="A ctx operation is called in a phase that does not allow it.",
    rationale=why(__doc__),
    messages={
        "mutation": "mutation `ctx.{target}` is not allowed in {phase}{through}",
        "read": "read `ctx.{target}` is not allowed in {phase}{through}",
        "read_by_id": "read-by-id `ctx.{target}` is not allowed in {phase}{through}",
        "publish": "`ctx.publish` is not allowed in {phase}{through}",
        "topic-read": "`ctx.{target}` is not allowed in {phase}{through}",
    },
    hint="Move this call to a phase that allows it.",
    hints={
        "mutation": (
            "Only a consumer's `mutate` may call a mutation, once, as its last statement: "
            "compute everything in `prepare`, return it in `data`, and in `mutate` make only "
            "this call with values from `prepared.data`. For a second change after the first "
            '("do A, then B"), publish an event from `next` and let a second consumer '
            "subscribed to it make B in its own `mutate`."
        ),
        "read": (
            "Do this read in `prepare` (or in the producer) and pass what later phases need "
            "through `prepared.data`; `mutate` and `next` may not search or list."
        ),
        "read_by_id": (
            "Do this read in `prepare` and pass the result through `prepared.data`; "
            'read-by-id in `mutate` needs the host policy mutate_reads="by_id", and `next` '
            "may not read at all."
        ),
        "publish": (
            "Publish from a producer or from a consumer's `next` (which runs after the "
            "mutation); in `prepare`, return the data in `data` and publish it in `next`."
        ),
        "topic-read": (
            "Only `prepare` may read topics: peek there, reserve the events you use, and pass "
            "what you need on through `prepared.data`."
        ),
    },
)


def _phases_for(call: CapabilityCall, mutate_reads: MutateReads) -> frozenset[HandlerPhase] | None:
    """The phases where `call` is allowed (from the phase table); None when it is unknown."""
    operation = call.method if call.method is not None else call.kind
    if operation is None:
        return None
    return allowed_phases(operation, mutate_reads)


def check(analysis: Analysis) -> Iterator[Finding]:
    """Each ctx call outside the phases the table allows for its kind."""
    for call in analysis.calls:
        allowed = _phases_for(call, analysis.policy.mutate_reads)
        phase = call.handler.phase
        if allowed is None or phase in allowed:
            continue
        if call.method == "publish":
            message_id = "publish"
        elif call.method is not None:
            message_id = "topic-read"
        else:
            assert call.kind is not None
            message_id = "mutation" if call.is_mutation else call.kind.value
        yield Finding(
            message_id,
            call.site,
            {
                "target": call.target,
                "phase": phase_name(phase),
                "through": through(analysis, call),
            },
            call.handler,
            related=helper_related(call, f"`ctx.{call.target}`"),
        )


rule = Rule(META, check)
