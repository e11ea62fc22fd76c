"""Every way a run begins or is picked up again: a producer or consumer run, a resume, a
retry, a durable operation's result or timeout, a reconciliation, restart recovery.

Each one hands the run to the `Driver`, which carries it through its phases.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from pydantic import JsonValue

from keep_sdk.contract.durable import InvocationStatus, NotificationOutcome
from keep_sdk.errors import ActionRefused, ActiveRunExists, PreconditionFailed
from keep_sdk.model import (
    Escalation,
    FailureKind,
    HandlerKind,
    LedgerEntry,
    LedgerStatus,
    MutationApplied,
    MutationSkipped,
    ReconcileStatus,
    RunPhase,
    RunRecord,
    RunStatus,
)
from keep_sdk.runtime._deployer import Deployer
from keep_sdk.runtime._driver import Driver
from keep_sdk.runtime.durable import NotifyReceipt, durable_store
from keep_sdk.runtime.frozen import durable_semantics

if TYPE_CHECKING:
    from keep_sdk.contract.manifest import DurableDeclaration

__all__ = ["TIMEOUT_ACTIONS", "Runs"]

TIMEOUT_ACTIONS = ("extend", "start-again", "supply", "skip", "cancel")
"""What a person may do about a timed-out durable operation."""


class Runs:
    """The run entry points of one runtime (see `keep_sdk.runtime.Runtime`): each begins or
    picks up a run and lets `driver` carry it."""

    def __init__(self, deployer: Deployer, driver: Driver) -> None:
        self.deployer = deployer
        self.driver = driver

    def run_producer(self, workflow: str, producer: str) -> RunRecord:
        """Run `producer` once on the current version; return the run as it ended."""
        with self.driver.store.reading():
            loaded = self.deployer.load(workflow)
            record = self.driver.store.get_handler(workflow, loaded.producer(producer).name)
        return self.driver.start(loaded, record, HandlerKind.PRODUCER)

    def run_consumer(self, workflow: str, consumer: str) -> RunRecord:
        """Run `consumer` once on the current version; return the run as it ended."""
        with self.driver.store.reading():
            loaded = self.deployer.load(workflow)
            record = self.driver.store.get_handler(workflow, loaded.consumer(consumer).name)
        return self.driver.start(loaded, record, HandlerKind.CONSUMER)

    def resume(self, run_id: str) -> RunRecord:
        """Continue a paused run from its phase (after a backoff, a grant or a resolution).

        A run at ``mutating`` whose mutation the host knows did not happen
        re-issues the same call with the same idempotency key.
        """
        run = self.driver.store.get_run(run_id)
        if run.status is RunStatus.ACTIVE:
            raise ActiveRunExists(f"run {run.id} is already active")
        if run.status in (RunStatus.PAUSED_WAITING, RunStatus.PAUSED_TIMEOUT):
            raise ActionRefused(
                f"run {run.id} waits for its durable operation; it continues when the result "
                "arrives (`keep notify CORRELATION_KEY --result JSON`, see `keep runs "
                f"{run.id}`) or when a person acts on it (`keep wait {run.id} ...`)"
            )
        run = self.driver.store.set_run_status(run.id, RunStatus.ACTIVE)
        return self.driver.drive(run)

    def notify(
        self, correlation_key: str, result: JsonValue = None, *, source: str = "api"
    ) -> NotifyReceipt:
        """Deliver the result of a durable operation by its correlation key, then continue
        its parked run to the end (``next`` and the commit) in this process.

        The notification is recorded in the inbox first (at-least-once delivery:
        a repeat is recorded as ``duplicate`` and applied never). A malformed key
        raises `InvalidArguments`, an unknown one `NotFound`; neither writes
        anything. A run that is not parked yet (its ``start`` still running)
        keeps the notification pending; `deliver_pending` applies it once the
        run parks. The caller holds the workflow's lease (or runs no worker).
        """
        notification = self.driver.durable.notify(correlation_key, result, source=source)
        if notification.outcome is not NotificationOutcome.PENDING:
            return NotifyReceipt(notification=notification)
        run = self.deliver(notification.id)
        current = durable_store(self.driver.store).list_notifications(notification.invocation_id)
        stored = next((n for n in current if n.id == notification.id), notification)
        return NotifyReceipt(notification=stored, run=run)

    def poll(self, invocation_id: str, *, owner: str) -> RunRecord | None:
        """Poll one due durable invocation as `owner` (claimed by compare-and-swap) and, once
        it is done, drive its run on: ``done(ok)`` to ``next`` and the commit, ``done(error)``
        to the failure routing as a definite failure. None when nothing was integrated."""
        polled = self.driver.durable.poll(invocation_id, owner=owner)
        if polled is None:
            return None
        invocation, run = polled
        if invocation.status is InvocationStatus.FAILED:
            what = f"ctx.{invocation.connector}.{invocation.operation}"
            active = self.driver.store.set_run_status(run.id, RunStatus.ACTIVE)
            return self.driver.fail(
                active, PreconditionFailed(f"{what} finished with an error: {invocation.error}")
            )
        if run.status is RunStatus.ACTIVE:
            return self.driver.drive(run)
        return run

    def durable_semantics(
        self, run: RunRecord, connector: str, operation: str
    ) -> DurableDeclaration:
        """The key fields and park timeout `run` uses for a durable operation: those frozen
        with its workflow version at deploy (the connector's current ones for versions
        recorded before they were frozen)."""
        loaded = self.deployer.load(run.workflow, run.workflow_version)
        live = self.driver.connectors.operation(connector, operation)
        return durable_semantics(loaded.manifest.connectors, connector, operation, live)

    def time_out(self, invocation_id: str) -> RunRecord | None:
        """Time out one durable invocation past its ``timeout_at`` (the scan's step): the
        invocation becomes ``timed_out``, its run ``paused:timeout``, and a person is told
        (an escalation naming the actions). None when it was not due or no longer parked."""
        timed_out = durable_store(self.driver.store).time_out_invocation(invocation_id)
        if timed_out is None:
            return None
        invocation, run = timed_out
        self.driver.observer.escalated(
            Escalation(
                run_id=run.id,
                workflow=run.workflow,
                reason=invocation.error or "the durable operation timed out",
                actions=list(TIMEOUT_ACTIONS),
                ledger_id=invocation.ledger_id,
                created_at=self.driver.now(),
            )
        )
        return run

    def scan_timeouts(self, limit: int = 100) -> list[RunRecord]:
        """Time out every parked invocation past its deadline (at most `limit` per call);
        reads only the index of active invocations' deadlines."""
        ended = []
        for invocation in durable_store(self.driver.store).expired_invocations(
            self.driver.now(), limit
        ):
            run = self.time_out(invocation.id)
            if run is not None:
                ended.append(run)
        return ended

    def deliver(self, notification_id: str) -> RunRecord | None:
        """Apply one pending notification to its parked run and drive the run on; None when
        the run is not parked (yet) or the workflow has an active run."""
        run = self.driver.durable.apply(notification_id)
        if run is None:
            return None
        return self.driver.drive(run)

    def retry(self, run_id: str) -> RunRecord:
        """Try a failed or crashed run again on the current version (after a fix, say).

        Once its mutation was applied (or skipped) a retry run continues from
        ``emitting`` with the copied results and the same reservations; before
        that, its events were released, so a fresh run prepares again.
        Returns the new run as it ended.
        """
        old = self.driver.store.get_run(run_id)
        if old.status not in (
            RunStatus.FAILED_LOGIC,
            RunStatus.FAILED_INTERNAL,
            RunStatus.CRASHED,
        ):
            raise ActionRefused(
                f"run {old.id} is {old.status.value}; only a failed or crashed run is retried "
                "(a paused run resumes by itself or by `keep resolve`)"
            )
        if old.kind is HandlerKind.PRODUCER:
            return self.run_producer(old.workflow, old.handler)
        orphan = self._orphaned_mutation(old)
        if orphan is not None:
            return self._recover_orphan(old, orphan)
        if self._failed_durably(old):
            return self.driver.drive(self.begin_retry(old, RunPhase.PREPARING))
        if not isinstance(old.mutation_result, MutationApplied | MutationSkipped):
            return self.run_consumer(old.workflow, old.handler)
        return self.driver.drive(self.begin_retry(old, RunPhase.EMITTING))

    def _orphaned_mutation(self, old: RunRecord) -> LedgerEntry | None:
        """The unsettled mutation of a run that ended without its outcome (it reached
        ``emitting`` with its entry still ``in_flight`` or ``needs_reconcile``, say): its
        events stay reserved, so a fresh run could never take them. None otherwise."""
        if old.mutation_result is not None:
            return None
        entry = self.driver.store.ledger_entry_for_run(old.id)
        if entry is None or entry.status not in (
            LedgerStatus.IN_FLIGHT,
            LedgerStatus.NEEDS_RECONCILE,
        ):
            return None
        if self.driver.invocation(old) is not None:
            return None
        return entry

    def _recover_orphan(self, old: RunRecord, entry: LedgerEntry) -> RunRecord:
        """Find out whether an orphaned mutation happened and continue its run from there:
        applied, a retry run goes on from ``emitting`` with the result; not applied, a
        retry run makes it again (same inputs, same reservations, same key). When nobody
        can tell, the entry becomes ``indeterminate`` and the retry is refused with why."""
        store, connectors = self.driver.store, self.driver.connectors
        what = f"ctx.{entry.connector}.{entry.operation}"
        if connectors.operation(entry.connector, entry.operation).reconcilable:
            outcome = connectors.reconcile(
                entry.connector, entry.operation, entry.params, entry.idempotency_key
            )
            if outcome.status is ReconcileStatus.APPLIED:
                store.record_mutation_applied(entry.id, outcome.result)
                return self.driver.drive(self.begin_retry(store.get_run(old.id), RunPhase.EMITTING))
            if outcome.status is ReconcileStatus.FAILED:
                store.record_mutation_failed(
                    entry.id, error=outcome.detail or f"{what} did not happen"
                )
                return self.driver.drive(self.begin_retry(old, RunPhase.MUTATING))
            said = outcome.detail or "the service could not say"
        else:
            said = f"{what} cannot be reconciled"
        store.record_mutation_indeterminate(
            entry.id, error=f"run {old.id} ended before its mutation settled; {said}"
        )
        raise ActionRefused(
            f"run {old.id} ended before {what} settled and nobody can tell whether it "
            f"happened ({said}); its ledger entry {entry.id} is now indeterminate: check the "
            "service, then retry again once it can answer"
        )

    def _failed_durably(self, old: RunRecord) -> bool:
        """Whether `old` ended on a definite failure of its durable operation and so still
        holds its reservations (a retry releases them and prepares again)."""
        if old.mutation_result is not None or old.phase is not RunPhase.MUTATING:
            return False
        entry = self.driver.store.ledger_entry_for_run(old.id)
        return (
            entry is not None
            and entry.status is LedgerStatus.FAILED
            and self.driver.invocation(old) is not None
        )

    def begin_retry(self, old: RunRecord, phase: RunPhase) -> RunRecord:
        """Begin a consumer run that continues `old` at `phase` with its inputs (not driven)."""
        return self.driver.store.begin_run(
            old.workflow,
            old.handler,
            HandlerKind.CONSUMER,
            input_state=old.input_state,
            retry_of=old.id,
            phase=phase,
        )

    def reconcile(self, ledger_id: str) -> LedgerEntry:
        """One reconciliation attempt for a ``needs_reconcile`` entry (the background loop).

        applied: the run continues to ``next`` and commits. failed (it did not
        happen): the call is re-issued with the same key. retry: the attempt is
        counted; when attempts run out the entry becomes indeterminate and the
        run is escalated. Returns the entry as it ended.
        """
        entry = self.driver.store.get_ledger_entry(ledger_id)
        if entry.status is LedgerStatus.NEEDS_RECONCILE:
            self.resume(entry.run_id)
        return self.driver.store.get_ledger_entry(ledger_id)

    def recover(self, workflow: str | None = None) -> list[RunRecord]:
        """Restart recovery: every active run was interrupted by a crash of the host.

        With `workflow`, only that workflow's active runs (a worker that took
        over the workflow's expired lease recovers just what it now owns).

        A run whose mutation may be in flight is paused for reconciliation (its
        ledger entry is due at once); one whose mutation was already found
        indeterminate waits for a person (escalated again). Any other run becomes
        ``crashed``: before a mutation its reservations are released for a fresh
        run (phase reset); after one, a retry run continues it from ``emitting``. Returns the runs
        as they ended.
        """
        finished: list[RunRecord] = []
        for run in self.driver.store.active_runs():
            if workflow is not None and run.workflow != workflow:
                continue
            entry = self.driver.store.ledger_entry_for_run(run.id)
            crash = "the host stopped while this run was active (crash or kill)"
            if (
                entry is not None
                and entry.status is LedgerStatus.IN_FLIGHT
                and self.driver.invocation(run)
            ):
                self.driver.logs.setdefault(run.id, []).append(
                    f"host: {crash}; calling start again with the same token"
                )
                finished.append(self.driver.drive(run))
                continue
            if entry is not None and entry.status in (
                LedgerStatus.IN_FLIGHT,
                LedgerStatus.NEEDS_RECONCILE,
            ):
                finished.append(self.driver.in_doubt(run, entry, crash))
                continue
            if entry is not None and entry.status is LedgerStatus.INDETERMINATE:
                reason = entry.error or "the outcome of the mutation is unknown"
                finished.append(self.driver.mutations.escalate(run, entry, f"{reason}; {crash}"))
                continue
            applied = run.phase in (RunPhase.MUTATED, RunPhase.EMITTING)
            crashed = self.driver.store.set_run_status(
                run.id,
                RunStatus.CRASHED,
                error=crash,
                failure=FailureKind.INTERNAL,
                release_reservations=run.kind is HandlerKind.CONSUMER and not applied,
            )
            if run.kind is HandlerKind.CONSUMER and applied:
                retry = self.driver.store.begin_run(
                    run.workflow,
                    run.handler,
                    HandlerKind.CONSUMER,
                    input_state=run.input_state,
                    retry_of=run.id,
                    phase=RunPhase.EMITTING,
                    version=run.workflow_version,
                )
                finished.append(self.driver.drive(retry))
            else:
                finished.append(crashed)
        return finished
