"""The host side of a run's one mutation: ledger entry first, then the call, then the outcome.

`MutationDesk` never runs script code: it receives the mutation a ``mutate``
phase asked for and owns everything after. The ledger entry is durable before
the external call; a call the service says did not happen is re-issued with the
same idempotency key; an uncertain outcome is reconciled, and escalated to a
person when reconciliation cannot tell.
"""

from __future__ import annotations

import datetime as dt
import random
from collections.abc import Callable
from typing import TYPE_CHECKING, Protocol

from pydantic import JsonValue

from keep_sdk.connectors import ConnectorSet, idempotency_key
from keep_sdk.contract.permissions import require_permission
from keep_sdk.errors import (
    InternalError,
    PermissionDenied,
    PreconditionFailed,
    TransientError,
    UncertainOutcome,
)
from keep_sdk.model import (
    Escalation,
    FailureKind,
    HostPolicy,
    LedgerEntry,
    LedgerStatus,
    MutationApplied,
    ReconcileStatus,
    RunPhase,
    RunRecord,
    RunStatus,
)
from keep_sdk.runtime._observer import Observer
from keep_sdk.runtime.deadline import Calls
from keep_sdk.stores import MutationIntent, SupportsFewerCheckpoints

if TYPE_CHECKING:
    from keep_sdk.sandbox import MutationRequested
    from keep_sdk.stores import Store

__all__ = ["MutationDesk", "Pause", "chain_root"]


class Pause(Protocol):
    """Pauses a run with a status and a reason, keeping its logs; returns the run."""

    def __call__(
        self, run: RunRecord, status: RunStatus, *, error: str, failure: FailureKind
    ) -> RunRecord: ...


def chain_root(store: Store, run: RunRecord) -> str:
    """The first run of `run`'s retry chain: keys and host messageIds derive from it."""
    seen = {run.id}
    while run.retry_of is not None and run.retry_of not in seen:
        seen.add(run.retry_of)
        run = store.get_run(run.retry_of)
    return run.id


class MutationDesk:
    """Performs, settles and reconciles mutations for the runtime."""

    def __init__(
        self,
        *,
        store: Store,
        connectors: ConnectorSet,
        policy: Callable[[str], HostPolicy],
        observer: Observer,
        now: Callable[[], dt.datetime],
        rng: random.Random,
        pause: Pause,
    ) -> None:
        self.store = store
        self._fewer = store if isinstance(store, SupportsFewerCheckpoints) else None
        self.connectors = connectors
        self.policy_for = policy
        self.observer = observer
        self.now = now
        self.rng = rng
        self.pause = pause
        self.calls = Calls()
        self.deferred: dict[str, tuple[str, JsonValue]] = {}
        """Mutations that took effect and await their run's commit to be recorded applied
        (``commit_applied_consumer_run``), by run id: (ledger id, result)."""

    def intent(
        self, run: RunRecord, mutation: MutationRequested, grants: list[str]
    ) -> MutationIntent:
        """The ledger intent of the mutation `mutate` asked for; its arguments are validated
        against the operation's model and its permission checked (nothing is written)."""
        what = f"ctx.{mutation.connector}.{mutation.operation}"
        declared = self.connectors.operation(mutation.connector, mutation.operation)
        args = declared.parse(mutation.arguments, connector=mutation.connector)
        require_permission(what, declared.permission, grants, run.workflow)
        prepared = run.prepare_result
        return MutationIntent(
            connector=mutation.connector,
            operation=mutation.operation,
            params=args.model_dump(mode="json", by_alias=True),
            idempotency_key=idempotency_key(run.workflow, run.handler, chain_root(self.store, run)),
            ui_title=prepared.ui.title if prepared and prepared.ui else None,
        )

    def perform(self, run: RunRecord, mutation: MutationRequested, grants: list[str]) -> RunRecord:
        """Check and record the mutation `mutate` asked for, then make the call; the ledger
        entry is durable before the external call."""
        intent = self.intent(run, mutation, grants)
        entry = self.store.record_mutation_intent(run.id, **intent.model_dump())
        return self.issue(run, entry)

    def settle(self, run: RunRecord, entry: LedgerEntry) -> RunRecord:
        """Continue a run whose mutation was already handed to the host."""
        match entry.status:
            case LedgerStatus.IN_FLIGHT:
                return self.issue(run, entry)
            case LedgerStatus.NEEDS_RECONCILE:
                return self.reconcile(run, entry)
            case LedgerStatus.APPLIED:
                return self.store.get_run(run.id)
            case _:
                raise InternalError(
                    f"run {run.id} is at mutating with a {entry.status.value} mutation; "
                    "only a retry run can attempt it again"
                )

    def issue(self, run: RunRecord, entry: LedgerEntry, *, defer: bool = False) -> RunRecord:
        """Make the external call of `entry` and record what happened.

        Only an error the connector classifies says what happened: a transient
        or permission failure leaves the entry as it is (the service says nothing
        happened; resuming re-issues the same call) and propagates;
        `PreconditionFailed` marks it ``failed`` (refused, nothing happened) and
        propagates. Anything else, a timeout included, is an uncertain outcome:
        the call may have taken effect, so it is reconciled, never re-issued
        blindly, and never while an earlier attempt may still be running.

        With `defer`, a store that merges checkpoints and an operation that reconciles,
        success is not written: the run comes back ``mutated`` in memory and the result
        waits in `deferred` for the run's commit, which records both; until then the
        entry is ``in_flight``, so a crash is reconciled (and finds the call applied).
        """
        what = f"ctx.{entry.connector}.{entry.operation}"
        if self.calls.running(entry.idempotency_key):
            return self._uncertain(run, entry, f"an earlier call of {what} is still running")
        try:
            result = self.calls.call(
                entry.idempotency_key,
                lambda: self.connectors.invoke(
                    entry.connector,
                    entry.operation,
                    entry.params,
                    idempotency_key=entry.idempotency_key,
                ),
                timeout_s=self.policy_for(run.workflow).mutation_timeout_s,
                what=what,
            )
        except UncertainOutcome as exc:
            return self._uncertain(run, entry, str(exc))
        except (TransientError, PermissionDenied):
            raise
        except PreconditionFailed as exc:
            self.store.record_mutation_failed(entry.id, error=str(exc))
            raise
        except Exception as exc:
            return self._uncertain(
                run,
                entry,
                f"{what} raised {type(exc).__name__}: {exc}; an unclassified error does not "
                "say whether the call took effect",
            )
        if (
            defer
            and self._fewer is not None
            and self.connectors.operation(entry.connector, entry.operation).reconcilable
        ):
            self.deferred[run.id] = (entry.id, result)
            return run.model_copy(
                update={
                    "phase": RunPhase.MUTATED,
                    "mutation_result": MutationApplied(result=result),
                }
            )
        return self._applied(run, entry, result)

    def _applied(self, run: RunRecord, entry: LedgerEntry, result: JsonValue) -> RunRecord:
        """Record `entry` applied with `result`; the run as that moved it."""
        if self._fewer is not None:
            return self._fewer.record_mutation_applied_run(entry.id, result)
        self.store.record_mutation_applied(entry.id, result)
        return self.store.get_run(run.id)

    def reconcile(self, run: RunRecord, entry: LedgerEntry) -> RunRecord:
        """Find out whether the mutation happened and act on the answer.

        An attempt of this process still running is waited for (later, with
        backoff); one that ended in the meantime answers for itself when it
        returned a result. Otherwise the connector is asked. A "did not happen"
        re-issues the call with the same key, at most once per reconcile round,
        so re-issues are spaced by the backoff and bounded by
        ``policy.reconcile_attempts``; past that a person decides.
        """
        what = f"ctx.{entry.connector}.{entry.operation}"
        declared = self.connectors.operation(entry.connector, entry.operation)
        if not declared.reconcilable:
            return self._indeterminate(run, entry, entry.error or "outcome unknown")
        if self.calls.running(entry.idempotency_key):
            return self._reconcile_later(run, entry, f"an earlier call of {what} is still running")
        ended = self.calls.ended(entry.idempotency_key)
        if ended is not None and ended.error is None:
            return self._applied(run, entry, ended.value)
        outcome = self.connectors.reconcile(
            entry.connector, entry.operation, entry.params, entry.idempotency_key
        )
        match outcome.status:
            case ReconcileStatus.APPLIED:
                return self._applied(run, entry, outcome.result)
            case ReconcileStatus.FAILED:
                attempts = entry.reconcile_attempts + 1
                if attempts >= self.policy_for(run.workflow).reconcile_attempts:
                    return self._indeterminate(
                        run,
                        entry,
                        f"{what} was issued {attempts} times; each time its outcome was "
                        "uncertain and the service then said it had not happened",
                    )
                return self.issue(run, self.store.get_ledger_entry(entry.id))
            case ReconcileStatus.RETRY:
                said = outcome.detail or "the service could not say whether it happened"
                return self._reconcile_later(run, entry, said)

    def _reconcile_later(self, run: RunRecord, entry: LedgerEntry, why: str) -> RunRecord:
        """Count one more attempt and pause the run until the next reconcile round.

        The entry keeps the reason the outcome became uncertain (the connector's, such as
        "timed out after the request was sent"); what the last reconcile said is added to
        it, so the person an escalation reaches reads both."""
        what = f"ctx.{entry.connector}.{entry.operation}"
        attempts = entry.reconcile_attempts + 1
        policy = self.policy_for(run.workflow)
        cause = entry.error if entry.error and entry.error != why else None
        if attempts >= policy.reconcile_attempts:
            tried = f"reconciliation could not tell after {attempts} attempts: {why}"
            return self._indeterminate(run, entry, f"{cause}; {tried}" if cause else tried)
        delay = policy.reconcile_backoff.delay(attempts, unit_random=self.rng.random())
        self.store.record_needs_reconcile(
            entry.id,
            next_reconcile_at=self.now() + dt.timedelta(seconds=delay),
            error=cause or why,
        )
        said = f"{cause}; {why}" if cause else why
        return self.pause(
            run,
            RunStatus.PAUSED_RECONCILIATION,
            error=f"outcome of {what} unknown ({said}); checking again in {delay:.0f}s",
            failure=FailureKind.INDETERMINATE,
        )

    def _uncertain(self, run: RunRecord, entry: LedgerEntry, error: str) -> RunRecord:
        """The call may have taken effect: reconcile once now, and after a repeat only later."""
        declared = self.connectors.operation(entry.connector, entry.operation)
        if not declared.reconcilable:
            return self._indeterminate(
                run,
                entry,
                f"{error}; ctx.{entry.connector}.{entry.operation} cannot be reconciled, "
                "so a person must say whether it happened",
            )
        if entry.status is LedgerStatus.IN_FLIGHT:
            entry = self.store.record_needs_reconcile(
                entry.id, next_reconcile_at=self.now(), error=error
            )
            return self.reconcile(run, entry)
        return self._reconcile_later(run, entry, error)

    def _indeterminate(self, run: RunRecord, entry: LedgerEntry, reason: str) -> RunRecord:
        entry = self.store.record_mutation_indeterminate(entry.id, error=reason)
        return self.escalate(run, entry, reason)

    def escalate(self, run: RunRecord, entry: LedgerEntry, reason: str) -> RunRecord:
        """Pause `run` for a person to say whether its ``indeterminate`` mutation happened."""
        paused = self.pause(
            run, RunStatus.PAUSED_RECONCILIATION, error=reason, failure=FailureKind.INDETERMINATE
        )
        declared = self.connectors.operation(entry.connector, entry.operation)
        actions = (["retry"] if declared.reconcilable else []) + ["didnt-happen", "skip"]
        subject = entry.ui_title or f"ctx.{entry.connector}.{entry.operation}"
        self.observer.escalated(
            Escalation(
                run_id=run.id,
                workflow=run.workflow,
                reason=f"{subject}: {reason}",
                actions=actions,
                ledger_id=entry.id,
                created_at=self.now(),
            )
        )
        return paused
