"""The preconditions of every commit point, shared by all built-in stores.

Each check takes the records a store has read (inside its transaction) and
raises the `StoreConflict` subclass that explains what does not hold, so every
backend refuses exactly the same things with the same words.
"""

from __future__ import annotations

import datetime as dt
import uuid
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from enum import Enum
from typing import Any

from pydantic import JsonValue

from keep_sdk.errors import (
    ActiveRunExists,
    EventNotPending,
    LeaseLost,
    MutationConflict,
    NotFound,
    PhaseConflict,
    RunNotActive,
    WorkflowPaused,
)
from keep_sdk.model import (
    Event,
    EventStatus,
    HandlerKind,
    LedgerEntry,
    LedgerStatus,
    MutationApplied,
    MutationNone,
    MutationSkipped,
    PrepareResult,
    RunPhase,
    RunRecord,
    RunStatus,
)
from keep_sdk.stores._models import Lease, PublishOutcome, Resolution

__all__ = [
    "FINISHED_STATUSES",
    "PAUSED_STATUSES",
    "ReservationMove",
    "RetryPlan",
    "active_run_exists",
    "applied_run_changes",
    "check_advance",
    "check_begin",
    "check_commit_consumer",
    "check_intent",
    "check_lease",
    "check_ledger_change",
    "check_ledger_run",
    "check_producer_commit",
    "check_release",
    "check_reservable",
    "check_resolution",
    "check_save_prepare",
    "check_status_change",
    "new_id",
    "phase_index",
    "plan_retry",
    "publish_outcome",
    "reconcile_attempts_after",
    "refuse_foreign_events",
    "resolution_effect",
]

PAUSED_STATUSES = frozenset(
    {
        RunStatus.PAUSED_TRANSIENT,
        RunStatus.PAUSED_APPROVAL,
        RunStatus.PAUSED_RECONCILIATION,
        RunStatus.PAUSED_WAITING,
        RunStatus.PAUSED_TIMEOUT,
    }
)
FINISHED_STATUSES = frozenset(
    {RunStatus.FAILED_LOGIC, RunStatus.FAILED_INTERNAL, RunStatus.CRASHED, RunStatus.COMMITTED}
)
_PHASES = list(RunPhase)
_ADVANCE_TARGETS = frozenset({RunPhase.MUTATING, RunPhase.EMITTING})
_COMMITTABLE_PHASES = frozenset({RunPhase.PREPARED, RunPhase.MUTATED, RunPhase.EMITTING})
_UNSETTLED_LEDGER = frozenset({LedgerStatus.IN_FLIGHT, LedgerStatus.NEEDS_RECONCILE})

MutationResultValue = MutationApplied | MutationNone | MutationSkipped


def new_id(prefix: str) -> str:
    """A new unique id such as ``run_3f2a…``."""
    return f"{prefix}_{uuid.uuid4().hex}"


def phase_index(phase: RunPhase) -> int:
    """Position of `phase` in the forward-only order preparing → committed."""
    return _PHASES.index(phase)


def publish_outcome(existing: Event | None) -> PublishOutcome:
    """What a publish does to the event already stored under its key (if any)."""
    if existing is None:
        return PublishOutcome.CREATED
    if existing.status is EventStatus.PENDING and existing.reserved_by is None:
        return PublishOutcome.REPLACED
    return PublishOutcome.DUPLICATE


def _require_active(run: RunRecord, action: str) -> None:
    if run.status is not RunStatus.ACTIVE:
        raise RunNotActive(
            f"cannot {action}: run {run.id} of {run.workflow}/{run.handler} is "
            f"{run.status.value}, not active; resume it or begin a retry run"
        )


def _require_kind(run: RunRecord, kind: HandlerKind, action: str) -> None:
    if run.kind is not kind:
        raise PhaseConflict(
            f"cannot {action}: run {run.id} belongs to {run.kind.value} "
            f"{run.workflow}/{run.handler}, and only {kind.value} runs can"
        )


def check_begin(
    *,
    workflow: str,
    paused: bool,
    active_run: str | None,
    handler_kind: HandlerKind | None,
    handler: str,
    kind: HandlerKind,
) -> None:
    """Refuse a run in a paused workflow, beside an active run, or of an undeclared handler."""
    if handler_kind is None:
        raise NotFound(
            f"workflow {workflow!r} has no handler {handler!r} in its current version; "
            "deploy a version that declares it"
        )
    if handler_kind is not kind:
        raise PhaseConflict(f"{workflow}/{handler} is a {handler_kind.value}, not a {kind.value}")
    if paused:
        raise WorkflowPaused(f"workflow {workflow!r} is paused; resume it before running it")
    if active_run is not None:
        raise active_run_exists(workflow, active_run)


class ReservationMove(Enum):
    """What a retry run does with the reservations its old run still holds."""

    TAKE_OVER = "take_over"
    RELEASE = "release"


@dataclass(frozen=True, slots=True)
class RetryPlan:
    """What a retry run inherits from the run it continues."""

    prepare_result: PrepareResult | None
    mutation_result: MutationResultValue | None
    reservations: ReservationMove


def plan_retry(
    old: RunRecord | None,
    *,
    handler: str,
    workflow: str,
    phase: RunPhase,
    ledger: LedgerEntry | None,
) -> RetryPlan | None:
    """Check a run may begin at `phase` continuing `old`; None when it continues nothing."""
    if old is None:
        if phase is not RunPhase.PREPARING:
            raise PhaseConflict(
                f"a new run starts at preparing, not {phase.value}; "
                "only a retry run (retry_of) may start later"
            )
        return None
    if old.workflow != workflow or old.handler != handler:
        raise PhaseConflict(
            f"run {old.id} belongs to {old.workflow}/{old.handler}; a retry must continue "
            f"a run of the same handler, not {workflow}/{handler}"
        )
    if old.status is RunStatus.ACTIVE:
        raise ActiveRunExists(f"run {old.id} is still active; pause or fail it before retrying it")
    if old.status is RunStatus.COMMITTED:
        raise PhaseConflict(f"run {old.id} is committed; there is nothing left to retry")
    if phase in (RunPhase.PREPARED, RunPhase.COMMITTED):
        raise PhaseConflict(
            f"a retry starts at preparing, mutating, mutated or emitting, not {phase.value}"
        )
    if phase is RunPhase.PREPARING:
        check_release(old, ledger)
        return RetryPlan(None, None, ReservationMove.RELEASE)
    if old.prepare_result is None:
        raise PhaseConflict(
            f"run {old.id} never saved a prepare result; its retry must start at preparing"
        )
    if phase is RunPhase.MUTATING:
        if ledger is not None and ledger.status is not LedgerStatus.FAILED:
            raise MutationConflict(
                f"run {old.id}'s mutation is {ledger.status.value}; only a failed mutation "
                "may be attempted again"
            )
        return RetryPlan(old.prepare_result, None, ReservationMove.TAKE_OVER)
    mutation_result = old.mutation_result
    if mutation_result is None:
        if ledger is not None:
            raise MutationConflict(
                f"run {old.id}'s mutation is {ledger.status.value}; settle it before "
                f"a retry continues at {phase.value}"
            )
        mutation_result = MutationNone()
    return RetryPlan(old.prepare_result, mutation_result, ReservationMove.TAKE_OVER)


def check_reservable(
    run: RunRecord, requested: dict[str, list[str]], found: Iterable[Event]
) -> list[Event]:
    """The events to reserve for `requested` ({topic: messageIds}), or raise.

    `NotFound` lists unknown ids; `EventNotPending` lists ids that are not
    pending (events this run already holds count as reservable).
    """
    by_key = {(e.topic, e.message_id): e for e in found}
    missing = [
        f"{topic}/{mid}"
        for topic, ids in requested.items()
        for mid in ids
        if (topic, mid) not in by_key
    ]
    if missing:
        raise NotFound(
            f"run {run.id} reserves events that do not exist in workflow {run.workflow!r}: "
            f"{', '.join(missing)}; reserve only messageIds returned by peek or getByIds"
        )
    events = [by_key[(topic, mid)] for topic, ids in requested.items() for mid in ids]
    taken = [
        f"{e.topic}/{e.message_id} ({e.status.value})"
        for e in events
        if not (
            e.status is EventStatus.PENDING
            or (e.status is EventStatus.RESERVED and e.reserved_by == run.id)
        )
    ]
    if taken:
        raise EventNotPending(
            f"run {run.id} reserves events that are not pending: {', '.join(taken)}; "
            "nothing was reserved, prepare again from a fresh peek"
        )
    return events


def check_save_prepare(run: RunRecord) -> None:
    """A prepare result is saved once, by an active consumer run at preparing."""
    _require_active(run, "save a prepare result")
    _require_kind(run, HandlerKind.CONSUMER, "save a prepare result")
    if run.phase is not RunPhase.PREPARING:
        raise PhaseConflict(
            f"run {run.id} is at {run.phase.value}; a prepare result is saved only at preparing"
        )


def check_advance(run: RunRecord, phase: RunPhase) -> None:
    """`advance_phase` moves an active consumer run forward to mutating or emitting."""
    _require_active(run, f"advance to {phase.value}")
    _require_kind(run, HandlerKind.CONSUMER, f"advance to {phase.value}")
    if phase not in _ADVANCE_TARGETS:
        raise PhaseConflict(
            f"advance_phase only moves to mutating or emitting; {phase.value} is reached "
            "through its own commit point"
        )
    if phase_index(phase) <= phase_index(run.phase):
        raise PhaseConflict(
            f"run {run.id} is at {run.phase.value}; phases only move forward, not to {phase.value}"
        )
    if run.phase is RunPhase.PREPARING:
        raise PhaseConflict(f"run {run.id} has no prepare result yet; save it first")
    if phase is RunPhase.MUTATING and run.phase is not RunPhase.PREPARED:
        raise PhaseConflict(f"run {run.id} is at {run.phase.value}, past mutating")


def check_status_change(run: RunRecord, status: RunStatus) -> None:
    """Paused runs resume or stop; active runs pause or stop; finished runs never change."""
    if status is RunStatus.COMMITTED:
        raise PhaseConflict(
            f"run {run.id} is committed only by commit_consumer_run or commit_producer_run"
        )
    if run.status in FINISHED_STATUSES:
        raise RunNotActive(
            f"run {run.id} is {run.status.value} and finished; begin a retry run instead"
        )
    if status is RunStatus.ACTIVE and run.status is not RunStatus.ACTIVE:
        return
    if status is RunStatus.ACTIVE:
        raise RunNotActive(f"run {run.id} is already active")


def check_release(run: RunRecord, ledger: LedgerEntry | None) -> None:
    """Reservations return to pending only while the mutation surely did not happen."""
    applied = run.mutation_result is not None and not isinstance(run.mutation_result, MutationNone)
    if applied or (ledger is not None and ledger.status is not LedgerStatus.FAILED):
        state = ledger.status.value if ledger is not None else "applied"
        raise MutationConflict(
            f"run {run.id}'s mutation is {state}; its reservations stay pinned until the "
            "run commits (reprocessing them could repeat the mutation)"
        )


def check_intent(run: RunRecord, existing: LedgerEntry | None) -> None:
    """A ledger entry is written once, by an active consumer run at prepared (the entry
    moves it to mutating) or mutating."""
    _require_active(run, "record a mutation")
    _require_kind(run, HandlerKind.CONSUMER, "record a mutation")
    if existing is not None:
        raise MutationConflict(
            f"run {run.id} already recorded its one mutation ({existing.id}, "
            f"{existing.status.value}); a run may mutate at most once"
        )
    if run.phase not in (RunPhase.PREPARED, RunPhase.MUTATING):
        raise PhaseConflict(
            f"run {run.id} is at {run.phase.value}; a mutation is recorded only at prepared "
            "or mutating"
        )


def check_ledger_change(entry: LedgerEntry, allowed: Sequence[LedgerStatus], target: str) -> None:
    """Refuse a ledger transition from a status not in `allowed`."""
    if entry.status not in allowed:
        names = ", ".join(s.value for s in allowed)
        raise MutationConflict(
            f"ledger entry {entry.id} is {entry.status.value}; it can become {target} "
            f"only from {names}"
        )


def check_ledger_run(run: RunRecord, entry: LedgerEntry) -> None:
    """A committed run's ledger entry never changes again."""
    if run.status is RunStatus.COMMITTED:
        raise MutationConflict(
            f"run {run.id} is committed; its ledger entry {entry.id} can no longer change"
        )


def check_resolution(entry: LedgerEntry, resolution: Resolution) -> None:
    """A person resolves only a mutation the host could not settle."""
    check_ledger_change(
        entry,
        (LedgerStatus.NEEDS_RECONCILE, LedgerStatus.INDETERMINATE),
        f"resolved ({resolution.value})",
    )
    if entry.resolved_by is not None:
        raise MutationConflict(
            f"ledger entry {entry.id} was already resolved by {entry.resolved_by}"
        )


def check_commit_consumer(
    run: RunRecord,
    ledger: LedgerEntry | None,
    mutation_result: MutationResultValue | None,
) -> MutationResultValue:
    """The mutation result the commit records; refuses while the mutation is unsettled."""
    _require_active(run, "commit")
    _require_kind(run, HandlerKind.CONSUMER, "commit a consumer run")
    if run.phase not in _COMMITTABLE_PHASES:
        raise PhaseConflict(
            f"run {run.id} is at {run.phase.value}; a consumer run commits from prepared, "
            "mutated or emitting"
        )
    if ledger is not None and ledger.run_id == run.id:
        skipped = ledger.resolved_by is not None and isinstance(
            run.mutation_result, MutationSkipped
        )
        if ledger.status is not LedgerStatus.APPLIED and not skipped:
            raise MutationConflict(
                f"run {run.id}'s mutation is {ledger.status.value}; it must be applied or "
                "resolved before the run commits"
            )
    recorded = run.mutation_result
    if mutation_result is None:
        return recorded if recorded is not None else MutationNone()
    if recorded is not None and recorded.status != mutation_result.status:
        raise MutationConflict(
            f"run {run.id} recorded mutation result {recorded.status!r}; "
            f"cannot commit it as {mutation_result.status!r}"
        )
    if recorded is None and not isinstance(mutation_result, MutationNone):
        raise MutationConflict(
            f"run {run.id} has no recorded mutation; it can only commit with status 'none'"
        )
    return recorded if recorded is not None else mutation_result


def check_producer_commit(run: RunRecord) -> None:
    """A producer run commits once, while active."""
    _require_active(run, "commit")
    _require_kind(run, HandlerKind.PRODUCER, "commit a producer run")


def applied_run_changes(run: RunRecord, result: JsonValue) -> dict[str, Any]:
    """Run fields an applied mutation sets: its result, and phase ``mutated`` if not past it."""
    changes: dict[str, Any] = {"mutation_result": MutationApplied(result=result)}
    if phase_index(run.phase) < phase_index(RunPhase.MUTATED):
        changes["phase"] = RunPhase.MUTATED
    return changes


def resolution_effect(
    run: RunRecord, resolution: Resolution, result: JsonValue = None
) -> tuple[LedgerStatus, dict[str, Any] | None]:
    """The ledger status and run fields a person's resolution sets."""
    if resolution is Resolution.HAPPENED:
        return LedgerStatus.APPLIED, applied_run_changes(run, result)
    if resolution is Resolution.DIDNT_HAPPEN:
        return LedgerStatus.FAILED, None
    return LedgerStatus.INDETERMINATE, {
        "mutation_result": MutationSkipped(),
        "phase": RunPhase.EMITTING,
    }


def check_lease(
    current: Lease | None, lease: Lease, now: dt.datetime, action: str, *, live: bool
) -> Lease:
    """The stored lease if `lease` still holds it (and, with `live`, has not expired)."""
    if current is None or current.token != lease.token or current.owner != lease.owner:
        holder = f"it is now held by {current.owner}" if current else "it was released"
        raise LeaseLost(
            f"cannot {action}: the lease of {lease.owner} on {lease.workflow!r} "
            f"(token {lease.token}) was lost, {holder}; stop working on the workflow"
        )
    if live and current.expired(now):
        raise LeaseLost(
            f"cannot {action}: the lease of {lease.owner} on {lease.workflow!r} expired at "
            f"{current.expires_at.isoformat()}; acquire it again before going on"
        )
    return current


def active_run_exists(workflow: str, holder: str) -> ActiveRunExists:
    """The error for a second active run in `workflow`."""
    return ActiveRunExists(
        f"workflow {workflow!r} already has an active run ({holder}); "
        "finish, pause or fail it before beginning or resuming another"
    )


def reconcile_attempts_after(entry: LedgerEntry) -> int:
    """Attempts after a move to needs_reconcile: a repeat means one more attempt answered retry."""
    repeat = entry.status is LedgerStatus.NEEDS_RECONCILE
    return entry.reconcile_attempts + (1 if repeat else 0)


def refuse_foreign_events(workflow: str, events: Sequence[Event]) -> None:
    """Raise `ValueError` naming the first of `events` that belongs to another workflow
    than `workflow` (what `SupportsBulkLoad.bulk_load_events` refuses)."""
    for event in events:
        if event.workflow != workflow:
            raise ValueError(
                f"bulk_load_events({workflow!r}) was given event {event.id!r} of workflow "
                f"{event.workflow!r}: nothing was loaded; load each workflow's events in a "
                "call of its own"
            )
