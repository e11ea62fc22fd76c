"""A person's actions: skip an event, resolve an escalated mutation, retry a failed run,
grant, pause, resume.

Each action is written to the store's audit log with its time and actor before
anything continues, and each refuses, with a message saying why and what to do
instead, when the run or event is not in a state the action applies to.
"""

from __future__ import annotations

import difflib
import json
from enum import StrEnum
from typing import TYPE_CHECKING

from pydantic import JsonValue

from keep_sdk.contract.codec import BoundaryError, check
from keep_sdk.contract.workflow import WorkflowManifest
from keep_sdk.errors import ActionRefused, InvalidArguments, LogicError, NotFound
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
from keep_sdk.runtime._durable_actions import CANCELLED_BY, SKIPPED_BY, DurableActions
from keep_sdk.stores import (
    Publication,
    PublishResult,
    Resolution,
    WorkflowRecord,
    publish_from_outside,
    workflow_for_topic,
)

if TYPE_CHECKING:
    from keep_sdk.runtime.engine import Runtime

__all__ = [
    "RESOLVED_BY",
    "PersonActions",
    "ResolveChoice",
    "ledger_decision",
    "resolve_choices",
    "run_resolution",
]

RESOLVED_BY = "resolved by "
"""How the error of a run a person's decision ended begins (`run_resolution`)."""

_ESCALATED = (LedgerStatus.INDETERMINATE, LedgerStatus.NEEDS_RECONCILE)
_RETRYABLE = (RunStatus.FAILED_LOGIC, RunStatus.FAILED_INTERNAL, RunStatus.CRASHED)


class ResolveChoice(StrEnum):
    """How a person resolves a run (`PersonActions.resolve`; ``keep resolve RUN --CHOICE``)."""

    RETRY = "retry"
    """A failed or crashed run: run it again. An escalated mutation: ask again whether it
    happened (`PersonActions.try_again`)."""
    DIDNT_HAPPEN = "didnt-happen"
    """The escalated mutation did not happen: a retry run makes it again."""
    SKIP = "skip"
    """Give up on the escalated mutation: ``next`` sees ``{status: "skipped"}``."""
    HAPPENED = "happened"
    """The escalated mutation happened, with the result the person gives: ``next`` sees it
    applied with that result (`PersonActions.happened`)."""


def run_resolution(run: RunRecord) -> str | None:
    """What a person decided that ended `run` (``didnt-happen``: a retry run makes the
    change again), in words; None for a run no decision ended. Such a run is stored
    ``failed:internal`` but is settled: it shows its resolution, never a retry."""
    if run.status is RunStatus.FAILED_INTERNAL and (run.error or "").startswith(RESOLVED_BY):
        return run.error
    return None


def resolve_choices(
    run: RunRecord, entry: LedgerEntry | None, *, reconcilable: bool
) -> list[ResolveChoice]:
    """The choices `PersonActions.resolve` accepts for `run` in its state (it refuses the
    others), given its ledger `entry` and whether that operation can reconcile.

    A failed or crashed run: ``retry``. A run paused on an escalated mutation: ``retry``
    (only when `reconcilable`), ``happened``, ``didnt-happen`` and ``skip``; on a mutation already
    known not to have happened: ``didnt-happen``. Any other run: none.
    """
    if run_resolution(run) is not None:
        return []
    if run.status in _RETRYABLE:
        return [ResolveChoice.RETRY]
    if run.status is RunStatus.PAUSED_RECONCILIATION and entry is not None:
        if entry.status in _ESCALATED:
            asks = [ResolveChoice.RETRY] if reconcilable else []
            return [
                *asks,
                ResolveChoice.HAPPENED,
                ResolveChoice.DIDNT_HAPPEN,
                ResolveChoice.SKIP,
            ]
        if entry.status is LedgerStatus.FAILED:
            return [ResolveChoice.DIDNT_HAPPEN]
    return []


def ledger_decision(entry: LedgerEntry) -> str | None:
    """What a person decided about a mutation, in words; None when nobody did.

    A decision leaves its trace in ``resolved_by``, the status it set, the result
    and the detail recorded with it: ``applied`` (it happened, with the result
    recorded: confirmed, reconciled or supplied by hand), ``failed`` (a durable
    wait cancelled or skipped: ``next`` saw ``{status: "skipped"}``; or it did not
    happen and a retry run makes it again) or ``indeterminate`` (skipped).
    """
    if entry.resolved_by is None:
        return None
    who = entry.resolved_by
    if entry.status is LedgerStatus.APPLIED:
        return f"happened, with result {_compact(entry.result)} (recorded by {who})"
    if entry.status is LedgerStatus.FAILED:
        detail = entry.error or ""
        if detail.startswith(CANCELLED_BY):
            return f'{detail}; next saw {{status: "skipped"}} and nothing makes it again'
        if detail.startswith(SKIPPED_BY):
            return f'skipped by {who}; next saw {{status: "skipped"}} and nothing makes it again'
        return f"{who} said it did not happen; a retry run makes it again"
    return f"skipped by {who}; it may or may not have happened"


def _compact(result: object, limit: int = 200) -> str:
    text = json.dumps(result, ensure_ascii=False, sort_keys=True, separators=(",", ":"))
    return text if len(text) <= limit else text[: limit - 1] + "…"


class PersonActions(DurableActions):
    """What a person can do about a workflow, its events and its blocked runs."""

    def __init__(self, runtime: Runtime) -> None:
        self.runtime = runtime
        self.store = runtime.store

    def skip_event(self, event_id: str, *, actor: str, reason: str | None = None) -> Event:
        """Never deliver a pending event."""
        return self.store.skip_event(event_id, actor=actor, reason=reason)

    def resolve(
        self,
        run_id: str,
        choice: ResolveChoice | str,
        *,
        actor: str,
        result: JsonValue = None,
    ) -> RunRecord:
        """Do what the person chose for the run: ``retry`` is `retry` for a failed or
        crashed run and `try_again` for any other; ``happened`` is `happened` with
        `result`; ``didnt-happen`` is `didnt_happen`; ``skip`` is `skip`. Each refuses,
        as it does when called directly, a run its choice does not apply to; a choice
        that is none of these is `ActionRefused` naming the valid ones, with nothing
        read or written. Returns the run as it ended.
        """
        try:
            chosen = ResolveChoice(choice)
        except ValueError:
            valid = ", ".join(c.value for c in ResolveChoice)
            raise ActionRefused(
                f"{choice!r} is not a way to resolve a run; choose one of: {valid}"
            ) from None
        if chosen is ResolveChoice.HAPPENED:
            return self.happened(run_id, result, actor=actor)
        if chosen is ResolveChoice.DIDNT_HAPPEN:
            return self.didnt_happen(run_id, actor=actor)
        if chosen is ResolveChoice.SKIP:
            return self.skip(run_id, actor=actor)
        if self.store.get_run(run_id).status in _RETRYABLE:
            return self.retry(run_id, actor=actor)
        return self.try_again(run_id, actor=actor)

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

    def happened(self, run_id: str, result: JsonValue, *, actor: str) -> RunRecord:
        """Record that the escalated mutation happened, with `result` (what the service
        returned, as the person read it there): ``next`` sees ``{status: "applied",
        result}`` and the run commits. `result` must cross into the run as any value does
        (`InvalidArguments` naming the problem, nothing written, otherwise)."""
        run, entry = self._escalated(run_id)
        limits = self.runtime.policy_for(run.workflow).sandbox
        try:
            check(
                result,
                root="result",
                max_bytes=limits.max_value_bytes,
                max_depth=limits.max_value_depth,
            )
        except BoundaryError as exc:
            raise InvalidArguments(
                f"the result cannot enter the run, so nothing was recorded: {exc.message}",
                problems=[exc.message],
            ) from None
        self.store.resolve_mutation(
            entry.id,
            Resolution.HAPPENED,
            actor=actor,
            detail=f"{actor} said it happened and gave its result",
            result=result,
        )
        return self.runtime.resume(run.id)

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
            error=f"{RESOLVED_BY}{actor}: the change did not happen; run {retry.id} makes it again",
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
        resolution = run_resolution(run)
        if resolution is not None:
            raise ActionRefused(f"run {run.id} is settled ({resolution}); nothing to retry")
        if run.status not in _RETRYABLE:
            raise ActionRefused(
                f"run {run.id} is {run.status.value}; only a failed or crashed run is retried "
                "(a paused run resumes by itself or by `keep resolve`)"
            )
        self.store.record_audit(actor=actor, action="retry", target=run.id, workflow=run.workflow)
        return self.runtime.retry(run.id)

    def permissions(self) -> list[str]:
        """Every permission the connectors declare, sorted."""
        manifest = self.runtime.connectors.manifest()
        return sorted({op.permission for c in manifest.connectors for op in c.operations})

    def check_permission(self, permission: str, *, workflow: str | None = None) -> None:
        """Refuse (`ActionRefused`, with a did-you-mean) a permission no connector declares.

        With `workflow`, a permission its current version's frozen connector manifest
        declares is accepted without building any connector, so a person can grant while
        a configured server is down."""
        if workflow is not None and permission in self._frozen_permissions(workflow):
            return
        declared = self.permissions()
        if permission in declared:
            return
        close = difflib.get_close_matches(permission, declared, n=1)
        hint = f"did you mean {close[0]}? " if close else ""
        raise ActionRefused(
            f"no connector declares the permission {permission!r}; {hint}"
            f"known: {', '.join(declared)} (see `keep connectors`)"
        )

    def grant(self, workflow: str, permission: str, *, actor: str) -> list[RunRecord]:
        """Grant `permission` (refused, with nothing written, when no connector declares
        it); runs waiting for a permission resume (one still lacking another permission
        pauses again). Returns them as they ended."""
        self.check_permission(permission, workflow=workflow)
        self.store.grant_permission(workflow, permission, actor=actor)
        waiting = self.store.list_runs(workflow=workflow, status=RunStatus.PAUSED_APPROVAL)
        return [self.runtime.resume(run.id) for run in waiting]

    def _frozen_permissions(self, workflow: str) -> set[str]:
        try:
            stored = self.store.get_workflow_version(workflow).manifest
        except NotFound:
            return set()
        frozen = WorkflowManifest.model_validate(stored).connectors
        if frozen is None:
            return set()
        return {op.permission for c in frozen.connectors for op in c.operations}

    def workflow_for_topic(self, topic: str) -> str:
        """The one deployed workflow whose current version declares `topic`; `ActionRefused`
        when none or several do (then name the workflow explicitly)."""
        return workflow_for_topic(self.store, topic)

    def publish(self, workflow: str, publication: Publication, *, actor: str) -> PublishResult:
        """Publish an event from outside into a topic the workflow's current version declares
        (to feed a consumer-only workflow, or replay an input), audited as ``publish``.

        Idempotent per messageId like every publish: a pending event with the same
        id is replaced, a consumed or skipped one is a duplicate and nothing changes.
        Refused (`ActionRefused`, listing the declared topics) for any other topic, and
        (`InvalidArguments`) for an event ``ctx.publish`` would refuse: too large, too
        deep, or not strict JSON, in the boundary's unit (UTF-8 bytes of canonical JSON).
        """
        return publish_from_outside(
            self.store, workflow, publication, policy=self.runtime.policy, actor=actor
        )

    def revoke(self, workflow: str, permission: str, *, actor: str) -> WorkflowRecord:
        """Take back a granted permission: runs that need it afterwards wait for a grant.
        `NotFound` when the workflow was never granted it."""
        return self.store.revoke_permission(workflow, permission, actor=actor)

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
