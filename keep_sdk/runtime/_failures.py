"""Failure classification and routing: what a failure means for the run.

The table (specification chapters 06b and 16, summarised in DESIGN.md):

| failure | run status | reservations before the mutation | after it was applied |
|---|---|---|---|
| transient | paused:transient, resumes after backoff | kept | kept |
| store unavailable | as transient; a mutation in flight is reconciled | kept | kept |
| permission | paused:approval until a person grants | kept | kept |
| logic | failed:logic | released (phase reset) | kept; a retry run starts at emitting |
| precondition | failed:logic | released (phase reset) | kept; a retry run starts at emitting |
| indeterminate | paused:reconciliation, escalated | kept | — |
| internal | failed:internal | released (phase reset) | kept; a retry run starts at emitting |

A phase reset (releasing the reservations so that a fresh run prepares again)
happens only while no mutation can have been applied.
"""

from __future__ import annotations

from dataclasses import dataclass

from keep_sdk.errors import (
    LogicError,
    PermissionDenied,
    PreconditionFailed,
    StoreUnavailable,
    TransientError,
    UncertainOutcome,
)
from keep_sdk.model import FailureKind, RunStatus

__all__ = ["Route", "classify", "route"]


@dataclass(frozen=True, slots=True)
class Route:
    """Where a failure sends the run."""

    status: RunStatus
    release_reservations: bool
    escalate: bool = False


def classify(exc: BaseException) -> FailureKind:
    """The failure class of an exception; anything unclassified is internal.

    `StoreUnavailable` (the database could not be used just now) is transient: the
    run waits out a backoff and continues, it is not a bug of the script or the host.
    """
    match exc:
        case TransientError() | StoreUnavailable():
            return FailureKind.TRANSIENT
        case PermissionDenied():
            return FailureKind.PERMISSION
        case PreconditionFailed():
            return FailureKind.PRECONDITION
        case UncertainOutcome():
            return FailureKind.INDETERMINATE
        case LogicError():
            return FailureKind.LOGIC
        case _:
            return FailureKind.INTERNAL


def route(kind: FailureKind, *, mutation_may_have_happened: bool) -> Route:
    """The run status for a failure of `kind` and whether its reservations are released.

    `mutation_may_have_happened` is True once a ledger entry exists that is not
    ``failed``: from then on the run's inputs stay pinned whatever happens.
    """
    release = not mutation_may_have_happened
    match kind:
        case FailureKind.TRANSIENT:
            return Route(RunStatus.PAUSED_TRANSIENT, release_reservations=False)
        case FailureKind.PERMISSION:
            return Route(RunStatus.PAUSED_APPROVAL, release_reservations=False, escalate=True)
        case FailureKind.INDETERMINATE:
            return Route(RunStatus.PAUSED_RECONCILIATION, release_reservations=False, escalate=True)
        case FailureKind.LOGIC | FailureKind.PRECONDITION:
            return Route(RunStatus.FAILED_LOGIC, release_reservations=release)
        case FailureKind.INTERNAL:
            return Route(RunStatus.FAILED_INTERNAL, release_reservations=release)
