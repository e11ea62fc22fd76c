"""Building a run's trace: each phase's calls, classified and redacted, kept until the run
commits or pauses.

The sandbox reports every ctx call of a phase (`keep_sdk.sandbox.Trace`) with its
arguments and results already cut to the phase's trace budget
(`SandboxLimits.max_trace_bytes`). `phase_trace` turns that into the stored
`PhaseTrace`: secrets redacted (`redact_value`), a failed call classified with
the failure kind the runtime routes it by. `settle_mutation` completes the
``requested`` call of mutate with what the host's performing it returned;
`call_outcome` says, for people, what became of that call.
"""

from __future__ import annotations

from pydantic import JsonValue

from keep_sdk.errors import KeepError
from keep_sdk.model import (
    FailureKind,
    HandlerPhase,
    MutationApplied,
    MutationSkipped,
    PhaseTrace,
    RunRecord,
    RunStatus,
    TraceCall,
)
from keep_sdk.runtime._actions import run_resolution
from keep_sdk.runtime._failures import classify
from keep_sdk.runtime.redaction import redact, redact_value
from keep_sdk.sandbox import CallFailed, HostCall, InternalFailure, PhaseResult

__all__ = ["call_outcome", "phase_trace", "settle_mutation"]


def _failure(call: HostCall, result: PhaseResult) -> FailureKind | None:
    if call.status == "refused":
        return FailureKind.LOGIC
    if call.status != "failed":
        return None
    outcome = result.outcome
    if isinstance(outcome, CallFailed):
        return outcome.failure
    if isinstance(outcome, InternalFailure):
        return FailureKind.INTERNAL
    return FailureKind.LOGIC


def _call(call: HostCall, result: PhaseResult) -> TraceCall:
    return TraceCall(
        operation=call.name,
        arguments=redact_value(call.arguments),
        status=call.status,
        result=redact_value(call.result),
        error=redact(call.error) if call.error is not None else None,
        failure=_failure(call, result),
        duration_s=max(call.duration_s, 0.0),
        line=call.line,
    )


def phase_trace(phase: HandlerPhase, result: PhaseResult) -> PhaseTrace:
    """The stored trace of one phase from what the sandbox reported."""
    return PhaseTrace(
        phase=phase,
        calls=[_call(call, result) for call in result.trace.calls],
        truncated=result.trace.truncated,
        wall_time_s=max(result.trace.wall_time_s, 0.0),
    )


def settle_mutation(
    trace: PhaseTrace,
    *,
    run: RunRecord | None = None,
    error: KeepError | None = None,
    duration_s: float = 0.0,
) -> PhaseTrace:
    """`trace` (of mutate) with its ``requested`` call completed: the connector's result
    when `run` shows the mutation applied, else the error (`error`, or the run's own
    when the host paused it, e.g. for reconciliation)."""
    calls = list(trace.calls)
    for index in range(len(calls) - 1, -1, -1):
        if calls[index].status != "requested":
            continue
        update: dict[str, JsonValue | FailureKind | float | None] = {"duration_s": duration_s}
        if error is not None:
            update |= {"error": redact(str(error)), "failure": classify(error)}
        elif run is not None and isinstance(run.mutation_result, MutationApplied):
            update["result"] = redact_value(run.mutation_result.result)
        elif run is not None:
            update |= {"error": redact(run.error) if run.error else None, "failure": run.failure}
        calls[index] = calls[index].model_copy(update=update)
        break
    return trace.model_copy(update={"calls": calls})


def call_outcome(call: TraceCall, run: RunRecord) -> str:
    """What a person is shown as the status of `call` in `run`'s trace.

    A call other than mutate's keeps its stored status. The mutation (stored
    ``requested``) shows its outcome: ``applied`` (the run holds the connector's
    result, also once reconciled or confirmed by a person), ``skipped`` or
    ``resolved`` (a person decided), ``uncertain`` (nobody knows whether it happened:
    the run waits for reconciliation or a person), ``failed`` (it definitely did not
    take effect), or ``requested`` while the host has not performed it yet."""
    if call.status != "requested":
        return call.status
    result = run.mutation_result
    if isinstance(result, MutationApplied):
        return "applied"
    if isinstance(result, MutationSkipped):
        return "skipped"
    if run_resolution(run) is not None:
        return "resolved"
    uncertain = FailureKind.INDETERMINATE
    if uncertain in (call.failure, run.failure) or run.status is RunStatus.PAUSED_RECONCILIATION:
        return "uncertain"
    if call.error is not None or run.failure is not None:
        return "failed"
    return "requested"
