"""A person's actions: skip an event, resolve an escalated mutation, retry a failed run,
grant, pause, resume.

Each action is written to the store's audit log with its time and actor before
anything continues, and each refuses, with a message saying why and what to do
instead, when the run or event is not in a state the action applies to.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from keep_sdk.errors import ActionRefused, LogicError
from keep_sdk.model import (
    Event,
    HandlerKind,
    LedgerEntry,
    LedgerStatus,
    ReconcileStatus,
    RunPhase,
    RunRecord,
    RunStatus,
)
from keep_sdk.stores import Resolution, WorkflowRecord

if TYPE_CHECKING:
    from keep_sdk.runtime.engine import Runtime

__all__ = ["PersonActions"]

_ESCALATED = (LedgerStatus.INDETERMINATE, LedgerStatus.NEEDS_RECONCILE)
_RETRYABLE = (RunStatus.FAILED_LOGIC, RunStatus.FAILED_INTERNAL, RunStatus.CRASHED)


class PersonActions:
    """What a person can do about a workflow, its events and its blocked runs."""

    def __init__(self, runtime: Runtime) -> None:
        self.runtime = runtime
        self.store = runtime.store

    def skip_event(self, event_id: str, *, actor: str, reason: str | None = None) -> Event:
        """Never deliver a pending event."""
        return self.store.skip_event(event_id, actor=actor, reason=reason)

    def try_again(self, run_id: str, *, actor: str) -> RunRecord:
        """Ask the external system once more whether an escalated mutation happened.

        Only for operations that can reconcile. Applied: the run goes on to
        ``next``. Did not happen: as `didnt_happen`. Still unknown: nothing
        changes and the run stays escalated.
        """
        run, entry = self._escalated(run_id)
        declared = self.runtime.connectors.operation(entry.connector, entry.operation)
        if not declared.reconcilable:
            raise ActionRefused(
                f"ctx.{entry.connector}.{entry.operation} cannot be reconciled, so trying "
                "again cannot tell whether it happened; choose --didnt-happen or --skip"
            )
        outcome = self.runtime.connectors.reconcile(
            entry.connector, entry.operation, entry.params, entry.idempotency_key
        )
        self.store.record_audit(
            actor=actor,
            action="try_again",
            target=entry.id,
            workflow=run.workflow,
            detail={"run": run.id, "outcome": outcome.status.value, "detail": outcome.detail},
        )
        if outcome.status is ReconcileStatus.APPLIED:
            self.store.resolve_mutation(
                entry.id,
                Resolution.HAPPENED,
                actor=actor,
                detail="reconciled on a person's request",
                result=outcome.result,
            )
            return self.runtime.resume(run.id)
        if outcome.status is ReconcileStatus.FAILED:
            return self.didnt_happen(run.id, actor=actor)
        return run

    def didnt_happen(self, run_id: str, *, actor: str) -> RunRecord:
        """Record that the mutation did not happen; a retry run re-runs mutate.

        The retry run keeps the same PrepareResult and reservations; the
        escalated run ends ``failed:internal`` pointing at it. Returns the retry
        run as it ended.
        """
        run, entry = self._escalated(run_id, allow_failed=True)
        if entry.status is not LedgerStatus.FAILED:
            self.store.resolve_mutation(entry.id, Resolution.DIDNT_HAPPEN, actor=actor)
        retry = self.runtime.begin_retry(run, RunPhase.MUTATING)
        self.store.set_run_status(
            run.id,
            RunStatus.FAILED_INTERNAL,
            error=f"{actor} said the mutation did not happen; run {retry.id} attempts it again",
        )
        return self.runtime.drive(retry)

    def skip(self, run_id: str, *, actor: str) -> RunRecord:
        """Skip the escalated mutation: ``next`` runs with ``{status: "skipped"}`` and the
        run's events end ``skipped``."""
        run, entry = self._escalated(run_id)
        self.store.resolve_mutation(entry.id, Resolution.SKIP, actor=actor)
        return self.runtime.resume(run.id)

    def retry(self, run_id: str, *, actor: str) -> RunRecord:
        """Run a failed or crashed run again on the current version (after a fix, say).

        Audited as ``retry``, then `Runtime.retry`: a run whose mutation was
        applied (or skipped) continues from ``emitting``, any other starts
        afresh. Refused, with nothing written, for a run in any other status.
        Returns the new run as it ended.
        """
        run = self.store.get_run(run_id)
        if run.status not in _RETRYABLE:
            raise ActionRefused(
                f"run {run.id} is {run.status.value}; only a failed or crashed run is retried "
                "(a paused run resumes by itself or by `keep resolve`)"
            )
        self.store.record_audit(actor=actor, action="retry", target=run.id, workflow=run.workflow)
        return self.runtime.retry(run.id)

    def grant(self, workflow: str, permission: str, *, actor: str) -> list[RunRecord]:
        """Grant `permission`; runs waiting for a permission resume (one still lacking
        another permission pauses again). Returns them as they ended."""
        self.store.grant_permission(workflow, permission, actor=actor)
        waiting = self.store.list_runs(workflow=workflow, status=RunStatus.PAUSED_APPROVAL)
        return [self.runtime.resume(run.id) for run in waiting]

    def pause(self, workflow: str, *, actor: str, reason: str | None = None) -> WorkflowRecord:
        """Stop new runs of the workflow; runs already paused stay as they are."""
        return self.store.pause_workflow(workflow, actor=actor, reason=reason)

    def resume(self, workflow: str, *, actor: str) -> WorkflowRecord:
        """Let the workflow run again."""
        return self.store.resume_workflow(workflow, actor=actor)

    def _escalated(
        self, run_id: str, *, allow_failed: bool = False
    ) -> tuple[RunRecord, LedgerEntry]:
        run = self.store.get_run(run_id)
        entry = self.store.ledger_entry_for_run(run.id)
        allowed = _ESCALATED + ((LedgerStatus.FAILED,) if allow_failed else ())
        if (
            run.status is not RunStatus.PAUSED_RECONCILIATION
            or entry is None
            or entry.status not in allowed
        ):
            state = entry.status.value if entry else "no mutation"
            raise ActionRefused(
                f"run {run.id} is {run.status.value} with {state}; only a run paused for "
                "reconciliation of its mutation can be resolved (see `keep runs`)"
            )
        if run.kind is not HandlerKind.CONSUMER:
            raise LogicError(f"run {run.id} is a producer run; producers do not mutate")
        return run, entry
