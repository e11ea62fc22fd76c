"""`Runtime`: one producer or consumer run through the sandbox and the store.

A consumer run moves through the phases of chapter 06b with a durable
checkpoint after each step:

1. ``prepare`` runs; its PrepareResult and reservations are saved together
   (phase ``prepared``) before anything else happens.
2. With reservations, ``mutate`` runs and may ask for one mutation. The host
   writes the ledger entry ``in_flight`` (durable) and only then calls the
   connector with the run's idempotency key. Success records ``applied`` and
   phase ``mutated`` together.
3. ``next`` runs with ``mutationResult``; its state, its publishes and the
   consumption of the reservations commit in one transaction.

Failures change the run's status, never its phase (see `failures.route`).
The mutate handler never runs again once its mutation was handed to the host:
uncertain outcomes are reconciled by the host, and a call the host knows did
not happen is re-issued with the same idempotency key.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import random
import re
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from functools import cached_property
from typing import TYPE_CHECKING

from pydantic import JsonValue

from keep_sdk.connectors import ConnectorSet
from keep_sdk.contract import RESERVED_NAME_PREFIX
from keep_sdk.contract.durable import InvocationStatus, NotificationOutcome
from keep_sdk.contract.workflow import ConsumerManifest, ProducerManifest, WorkflowManifest
from keep_sdk.errors import (
    ActionRefused,
    ActiveRunExists,
    ConfigurationError,
    EventNotPending,
    InternalError,
    KeepError,
    LogicError,
    NotFound,
    PermissionDenied,
    PhaseViolation,
    PreconditionFailed,
    ScriptRejected,
    StoreUnavailable,
    TransientError,
)
from keep_sdk.model import (
    Escalation,
    FailureKind,
    HandlerKind,
    HandlerPhase,
    HostPolicy,
    LedgerEntry,
    LedgerStatus,
    MutationApplied,
    MutationNone,
    MutationSkipped,
    OperationKind,
    PhaseTrace,
    RunPhase,
    RunRecord,
    RunStatus,
)
from keep_sdk.runtime.checks import check_prepare_result, check_size
from keep_sdk.runtime.durable import DurableDesk, NotifyReceipt, durable_store
from keep_sdk.runtime.failures import classify, route
from keep_sdk.runtime.frozen import check_frozen, durable_semantics
from keep_sdk.runtime.host import PhaseHost
from keep_sdk.runtime.ledger import MutationDesk, chain_root
from keep_sdk.runtime.observer import Observer
from keep_sdk.runtime.schedules import next_run_at
from keep_sdk.runtime.tracing import phase_trace, settle_mutation
from keep_sdk.sandbox import (
    Completed,
    Determinism,
    Isolation,
    MutationRequested,
    PhaseRequest,
)
from keep_sdk.stores import (
    UNCHANGED,
    HandlerRecord,
    HandlerSpec,
    Store,
    SupportsDurable,
    Unchanged,
    WorkflowRecord,
    WorkflowVersion,
)

if TYPE_CHECKING:
    from keep_sdk.contract.durable import Invocation
    from keep_sdk.contract.manifest import DurableDeclaration, Manifest
    from keep_sdk.contract.observations import Observation
    from keep_sdk.runtime.loading import LoadedWorkflow, WorkflowLoader

__all__ = ["TIMEOUT_ACTIONS", "Runtime"]

TIMEOUT_ACTIONS = ("extend", "start-again", "supply", "skip", "cancel")
"""What a person may do about a timed-out durable operation."""

_PHASE_ORDER = list(RunPhase)

TRANSIENT_MARK = "host: transient failure "
"""Prefix of the run log line written for each transient failure, for people reading the log;
the backoff counts `RunRecord.transient_failures`."""


def _describe(exc: Exception) -> str:
    """One line about an unexpected host exception: its class and the first line of its
    text, without what a database driver appends (the SQL, its parameters)."""
    first = str(exc).split("\n", 1)[0]
    first = re.sub(r"^\([\w.]+\) ", "", first)
    if len(first) > 500:
        first = first[:500] + "…[truncated]"
    return f"{type(exc).__name__}: {first}"


def _ignore(observation: Observation) -> None:
    """The default observer: nobody is listening."""


@dataclass(frozen=True, slots=True)
class _Loaded:
    record: WorkflowRecord
    version: WorkflowVersion
    manifest: WorkflowManifest

    def producer(self, name: str) -> ProducerManifest:
        for producer in self.manifest.producers:
            if producer.name == name:
                return producer
        raise NotFound(
            f"workflow {self.record.name!r} version {self.version.version} has no producer "
            f"{name!r}; producers: {', '.join(p.name for p in self.manifest.producers) or 'none'}"
        )

    def consumer(self, name: str) -> ConsumerManifest:
        for consumer in self.manifest.consumers:
            if consumer.name == name:
                return consumer
        raise NotFound(
            f"workflow {self.record.name!r} version {self.version.version} has no consumer "
            f"{name!r}; consumers: {', '.join(c.name for c in self.manifest.consumers) or 'none'}"
        )


class Runtime:
    """Executes runs of deployed workflows against one store and one set of connectors.

    The composition root hands in what the runtime does not own: `connectors`,
    `load_workflow` (validates a script on `deploy`; without it `deploy` is
    refused, runs of deployed versions still work) and `observe` (told of every
    run, ledger and escalation change; ``KeepPlugins.notify`` calls the
    ``observe`` hooks). `isolation` runs a phase in the sandbox; it has no default here, so
    no runtime is built with a silent choice (`keep_sdk.Installation` defaults to
    `keep_sdk.sandbox.ProcessIsolation`, which survives engine crashes). `now` is the
    clock; `rng` draws backoff jitter; `deterministic` fixes each phase's
    ``Date`` to `now()` and seeds ``Math.random`` from the run id (replays, tests).
    Every method leaves the store consistent whatever it raises.
    """

    def __init__(
        self,
        store: Store,
        connectors: ConnectorSet,
        *,
        load_workflow: WorkflowLoader | None = None,
        observe: Callable[[Observation], None] | None = None,
        policy: HostPolicy | None = None,
        isolation: Isolation,
        now: Callable[[], dt.datetime] | None = None,
        rng: random.Random | None = None,
        deterministic: bool = False,
        workflow_policies: Mapping[str, HostPolicy] | None = None,
    ) -> None:
        self.store = store
        self.connectors = connectors
        self.load_workflow = load_workflow
        self.policy = policy or HostPolicy()
        self.workflow_policies = dict(workflow_policies or {})
        self.isolation = isolation
        self.deterministic = deterministic
        self.now = now or (lambda: dt.datetime.now(dt.UTC))
        self.rng = rng or random.Random()
        self.observe = observe or _ignore
        self.observer = Observer(store, self.observe)
        self._versions: dict[tuple[str, int], _Loaded] = {}
        self._logs: dict[str, list[str]] = {}
        self._begun: dict[str, HandlerRecord] = {}
        self._steps: dict[str, RunPhase] = {}
        self._log_bytes: dict[str, int] = {}
        self._traces: dict[str, list[PhaseTrace]] = {}
        self.mutations = MutationDesk(
            store=store,
            connectors=self.connectors,
            policy=self.policy_for,
            observer=self.observer,
            now=self.now,
            rng=self.rng,
            pause=self._pause,
        )
        self.durable = DurableDesk(
            store=store,
            connectors=self.connectors,
            policy=self.policy,
            now=self.now,
            take_logs=lambda run_id: self._logs.pop(run_id, []),
        )

    @cached_property
    def manifest(self) -> Manifest:
        """The manifest of every connector, made the first time it is read (which builds
        every connector not built yet): constructing a runtime builds nothing."""
        return self.connectors.manifest()

    def policy_for(self, workflow: str) -> HostPolicy:
        """The policy runs of `workflow` get: its own (keep.toml's ``[workflows.<name>.policy]``
        merged over ``[policy]``) when it has one, else `policy`."""
        return self.workflow_policies.get(workflow, self.policy)

    # Deployment

    def deploy(self, source: str, *, name: str | None = None, filename: str | None = None) -> int:
        """Validate `source` and store it as the workflow's new current version.

        Raises `ScriptRejected` (with the validator's report) when the script
        has errors. Returns the version number.
        """
        workflow_name, manifest, handlers = self._deployable(source, name, filename)
        return self.store.deploy(workflow_name, source, manifest, handlers=handlers)

    def deploy_if_changed(
        self, source: str, *, name: str | None = None, filename: str | None = None
    ) -> tuple[int, bool]:
        """Deploy `source` unless it is already the current version of its workflow.

        Returns ``(version, deployed)``: the new version and True, or the
        current version and False when its source is `source` byte for byte
        (nothing is written then). Without `name` the script's own name is
        used. Raises `ScriptRejected` like `deploy` for a script with errors.
        """
        workflow_name, manifest, handlers = self._deployable(source, name, filename)
        return self.store.deploy_if_changed(workflow_name, source, manifest, handlers=handlers)

    def _deployable(
        self, source: str, name: str | None, filename: str | None
    ) -> tuple[str, JsonValue, list[HandlerSpec]]:
        """Validate `source`; its workflow name, manifest and handlers, ready to deploy."""
        checked = self._check(source, filename, name).manifest
        manifest = checked.model_copy(update={"connectors": self.connectors.manifest()})
        workflow_name = name or manifest.name
        if not workflow_name:
            raise LogicError('the workflow has no name; add `name: "..."` to Keep.workflow({...})')
        if workflow_name.startswith(RESERVED_NAME_PREFIX):
            raise LogicError(
                f"the workflow name {workflow_name!r} starts with {RESERVED_NAME_PREFIX!r}, "
                "which is reserved for the workers' presence rows; choose another name"
            )
        handlers = [
            HandlerSpec(name=p.name, kind=HandlerKind.PRODUCER) for p in manifest.producers
        ] + [
            HandlerSpec(name=c.name, kind=HandlerKind.CONSUMER, subscribe=list(c.subscribe))
            for c in manifest.consumers
        ]
        return workflow_name, manifest.model_dump(mode="json"), handlers

    def _check(self, source: str, filename: str | None, name: str | None = None) -> LoadedWorkflow:
        """Validate `source` with the policy of its workflow (`name`, else the name the
        script declares): a per-workflow ``mutate_reads`` or limit decides its checks too."""
        if self.load_workflow is None:
            raise ConfigurationError(
                "this Runtime was built without a workflow loader, so it cannot validate and "
                "deploy scripts; pass load_workflow=KeepPlugins().load_workflow (or open an "
                "installation with keep_sdk.app.Installation)"
            )
        policy = self.policy_for(name) if name else self.policy
        try:
            loaded = self.load_workflow(
                source, connectors=self.connectors.manifest(), policy=policy, filename=filename
            )
        except ScriptRejected as exc:
            report = exc.report
            declared = report.workflow.name if report is not None and report.workflow else None
            if name or not declared or self.policy_for(declared) == policy:
                raise
            return self._check(source, filename, declared)
        declared = loaded.manifest.name
        if not name and declared and self.policy_for(declared) != policy:
            return self._check(source, filename, declared)
        return loaded

    # Runs

    def run_producer(self, workflow: str, producer: str) -> RunRecord:
        """Run `producer` once on the current version; return the run as it ended."""
        with self.store.reading():
            loaded = self._load(workflow)
            record = self.store.get_handler(workflow, loaded.producer(producer).name)
        run = self._begin(loaded, record, HandlerKind.PRODUCER)
        return self._drive(run, lambda r: self._producer(r, loaded))

    def run_consumer(self, workflow: str, consumer: str) -> RunRecord:
        """Run `consumer` once on the current version; return the run as it ended."""
        with self.store.reading():
            loaded = self._load(workflow)
            record = self.store.get_handler(workflow, loaded.consumer(consumer).name)
        run = self._begin(loaded, record, HandlerKind.CONSUMER)
        return self._drive(run, lambda r: self._consumer(r, loaded))

    def resume(self, run_id: str) -> RunRecord:
        """Continue a paused run from its phase (after a backoff, a grant or a resolution).

        A run at ``mutating`` whose mutation the host knows did not happen
        re-issues the same call with the same idempotency key.
        """
        run = self.store.get_run(run_id)
        if run.status is RunStatus.ACTIVE:
            raise ActiveRunExists(f"run {run.id} is already active")
        if run.status in (RunStatus.PAUSED_WAITING, RunStatus.PAUSED_TIMEOUT):
            raise ActionRefused(
                f"run {run.id} waits for its durable operation; it continues when the result "
                "arrives (`keep notify CORRELATION_KEY --result JSON`, see `keep runs "
                f"{run.id}`) or when a person acts on it (`keep wait {run.id} ...`)"
            )
        run = self.store.set_run_status(run.id, RunStatus.ACTIVE)
        return self._drive(run)

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
        notification = self.durable.notify(correlation_key, result, source=source)
        if notification.outcome is not NotificationOutcome.PENDING:
            return NotifyReceipt(notification=notification)
        run = self.deliver(notification.id)
        current = durable_store(self.store).list_notifications(notification.invocation_id)
        stored = next((n for n in current if n.id == notification.id), notification)
        return NotifyReceipt(notification=stored, run=run)

    def poll(self, invocation_id: str, *, owner: str) -> RunRecord | None:
        """Poll one due durable invocation as `owner` (claimed by compare-and-swap) and, once
        it is done, drive its run on: ``done(ok)`` to ``next`` and the commit, ``done(error)``
        to the failure routing as a definite failure. None when nothing was integrated."""
        polled = self.durable.poll(invocation_id, owner=owner)
        if polled is None:
            return None
        invocation, run = polled
        if invocation.status is InvocationStatus.FAILED:
            what = f"ctx.{invocation.connector}.{invocation.operation}"
            active = self.store.set_run_status(run.id, RunStatus.ACTIVE)
            return self._fail(
                active, PreconditionFailed(f"{what} finished with an error: {invocation.error}")
            )
        if run.status is RunStatus.ACTIVE:
            return self._drive(run)
        return run

    def durable_semantics(
        self, run: RunRecord, connector: str, operation: str
    ) -> DurableDeclaration:
        """The key fields and park timeout `run` uses for a durable operation: those frozen
        with its workflow version at deploy (the connector's current ones for versions
        recorded before they were frozen)."""
        loaded = self._load(run.workflow, run.workflow_version)
        live = self.connectors.operation(connector, operation)
        return durable_semantics(loaded.manifest.connectors, connector, operation, live)

    def time_out(self, invocation_id: str) -> RunRecord | None:
        """Time out one durable invocation past its ``timeout_at`` (the scan's step): the
        invocation becomes ``timed_out``, its run ``paused:timeout``, and a person is told
        (an escalation naming the actions). None when it was not due or no longer parked."""
        timed_out = durable_store(self.store).time_out_invocation(invocation_id)
        if timed_out is None:
            return None
        invocation, run = timed_out
        self.observer.escalated(
            Escalation(
                run_id=run.id,
                workflow=run.workflow,
                reason=invocation.error or "the durable operation timed out",
                actions=list(TIMEOUT_ACTIONS),
                ledger_id=invocation.ledger_id,
                created_at=self.now(),
            )
        )
        return run

    def scan_timeouts(self, limit: int = 100) -> list[RunRecord]:
        """Time out every parked invocation past its deadline (at most `limit` per call);
        reads only the index of active invocations' deadlines."""
        ended = []
        for invocation in durable_store(self.store).expired_invocations(self.now(), limit):
            run = self.time_out(invocation.id)
            if run is not None:
                ended.append(run)
        return ended

    def deliver(self, notification_id: str) -> RunRecord | None:
        """Apply one pending notification to its parked run and drive the run on; None when
        the run is not parked (yet) or the workflow has an active run."""
        run = self.durable.apply(notification_id)
        if run is None:
            return None
        return self._drive(run)

    def retry(self, run_id: str) -> RunRecord:
        """Try a failed or crashed run again on the current version (after a fix, say).

        Once its mutation was applied (or skipped) a retry run continues from
        ``emitting`` with the copied results and the same reservations; before
        that, its events were released, so a fresh run prepares again.
        Returns the new run as it ended.
        """
        old = self.store.get_run(run_id)
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
        if not isinstance(old.mutation_result, MutationApplied | MutationSkipped):
            return self.run_consumer(old.workflow, old.handler)
        return self._drive(self.begin_retry(old, RunPhase.EMITTING))

    def begin_retry(self, old: RunRecord, phase: RunPhase) -> RunRecord:
        """Begin a consumer run that continues `old` at `phase` with its inputs (not driven)."""
        return self.store.begin_run(
            old.workflow,
            old.handler,
            HandlerKind.CONSUMER,
            input_state=old.input_state,
            retry_of=old.id,
            phase=phase,
        )

    def close(self) -> None:
        """Stop observing the store (the store and the isolation stay open: their owner closes
        them). Until then every change committed to the store in this process is observed,
        also one made through another `Runtime` on the same store."""
        self.observer.close()

    def drive(self, run: RunRecord) -> RunRecord:
        """Carry an active run (a fresh or retry run) as far as it can go; return it as it ended."""
        return self._drive(run)

    def reconcile(self, ledger_id: str) -> LedgerEntry:
        """One reconciliation attempt for a ``needs_reconcile`` entry (the background loop).

        applied: the run continues to ``next`` and commits. failed (it did not
        happen): the call is re-issued with the same key. retry: the attempt is
        counted; when attempts run out the entry becomes indeterminate and the
        run is escalated. Returns the entry as it ended.
        """
        entry = self.store.get_ledger_entry(ledger_id)
        if entry.status is LedgerStatus.NEEDS_RECONCILE:
            self.resume(entry.run_id)
        return self.store.get_ledger_entry(ledger_id)

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
        for run in self.store.active_runs():
            if workflow is not None and run.workflow != workflow:
                continue
            entry = self.store.ledger_entry_for_run(run.id)
            crash = "the host stopped while this run was active (crash or kill)"
            if (
                entry is not None
                and entry.status is LedgerStatus.IN_FLIGHT
                and self._invocation(run)
            ):
                self._logs.setdefault(run.id, []).append(
                    f"host: {crash}; calling start again with the same token"
                )
                finished.append(self._drive(run))
                continue
            if entry is not None and entry.status in (
                LedgerStatus.IN_FLIGHT,
                LedgerStatus.NEEDS_RECONCILE,
            ):
                finished.append(self._in_doubt(run, entry, crash))
                continue
            if entry is not None and entry.status is LedgerStatus.INDETERMINATE:
                reason = entry.error or "the outcome of the mutation is unknown"
                finished.append(self.mutations.escalate(run, entry, f"{reason}; {crash}"))
                continue
            applied = run.phase in (RunPhase.MUTATED, RunPhase.EMITTING)
            crashed = self.store.set_run_status(
                run.id,
                RunStatus.CRASHED,
                error=crash,
                failure=FailureKind.INTERNAL,
                release_reservations=run.kind is HandlerKind.CONSUMER and not applied,
            )
            if run.kind is HandlerKind.CONSUMER and applied:
                retry = self.store.begin_run(
                    run.workflow,
                    run.handler,
                    HandlerKind.CONSUMER,
                    input_state=run.input_state,
                    retry_of=run.id,
                    phase=RunPhase.EMITTING,
                    version=run.workflow_version,
                )
                finished.append(self._drive(retry))
            else:
                finished.append(crashed)
        return finished

    # The phase machine

    def _drive(
        self, run: RunRecord, step: Callable[[RunRecord], RunRecord] | None = None
    ) -> RunRecord:
        """Run `step` (by default: the rest of the run) and route whatever it raises."""
        if step is None:
            step = self._producer if run.kind is HandlerKind.PRODUCER else self._consumer
        try:
            return step(run)
        except KeepError as exc:
            return self._fail(self.store.get_run(run.id), exc)
        except Exception as exc:
            internal = InternalError(f"host error in run {run.id}: {_describe(exc)}")
            internal.__cause__ = exc
            return self._fail(self.store.get_run(run.id), internal)
        finally:
            self._begun.pop(run.id, None)
            self._steps.pop(run.id, None)
            self._traces.pop(run.id, None)

    def _producer(self, run: RunRecord, loaded: _Loaded | None = None) -> RunRecord:
        loaded = loaded or self._load(run.workflow, run.workflow_version)
        producer = loaded.producer(run.handler)
        handler = self._handler_at_begin(run)
        host = self._host(run, loaded, HandlerPhase.PRODUCER, producer.publishes)
        output = self._execute(run, loaded, host, state=handler.state, has_state=handler.has_state)
        commit = self.store.commit_producer_run(
            run.id,
            state=self._state_of(output, run.workflow),
            publishes=host.publishes,
            next_run_at=next_run_at(producer.schedule, self.now()),
            logs=self._take_logs(run.id),
            trace=self._traces.pop(run.id, []),
        )
        return commit.run

    def _consumer(self, run: RunRecord, loaded: _Loaded | None = None) -> RunRecord:
        loaded = loaded or self._load(run.workflow, run.workflow_version)
        consumer = loaded.consumer(run.handler)
        while True:
            match run.phase:
                case RunPhase.PREPARING:
                    run = self._prepare(run, loaded, consumer)
                case RunPhase.PREPARED:
                    assert run.prepare_result is not None
                    if not run.prepare_result.reservations:
                        return self._next(run, loaded, consumer)
                    run = self._mutate(run, loaded, consumer)
                case RunPhase.MUTATING:
                    run = self._mutate(run, loaded, consumer)
                case RunPhase.MUTATED | RunPhase.EMITTING:
                    return self._next(run, loaded, consumer)
                case RunPhase.COMMITTED:
                    return run
            if run.status is not RunStatus.ACTIVE:
                return run

    def _prepare(self, run: RunRecord, loaded: _Loaded, consumer: ConsumerManifest) -> RunRecord:
        handler = self._handler_at_begin(run)
        host = self._host(run, loaded, HandlerPhase.PREPARE, [])
        output = self._execute(run, loaded, host, state=handler.state, has_state=handler.has_state)
        result = check_prepare_result(
            output.result if isinstance(output, Completed) else None,
            returned=isinstance(output, Completed) and output.returned,
            consumer=consumer,
            policy=self.policy_for(run.workflow),
            now=self.now(),
        )
        try:
            saved = self.store.save_prepare_result(run.id, result)
        except (EventNotPending, NotFound) as exc:
            raise LogicError(
                f"prepare() of {run.handler} reserved events it cannot have: {exc}. Reserve "
                "only events returned by ctx.peek or ctx.getByIds that are still pending"
            ) from None
        return saved

    def _mutate(self, run: RunRecord, loaded: _Loaded, consumer: ConsumerManifest) -> RunRecord:
        self._steps[run.id] = RunPhase.MUTATING
        if run.phase is RunPhase.MUTATING:
            entry = self.store.ledger_entry_for_run(run.id)
            if entry is not None:
                invocation = self._invocation(run)
                if invocation is not None and entry.status is LedgerStatus.IN_FLIGHT:
                    return self.durable.start(run, entry, invocation)
                return self.mutations.settle(run, entry)
        assert run.prepare_result is not None
        prepared = run.prepare_result.model_dump(mode="json", by_alias=True)
        host = self._host(run, loaded, HandlerPhase.MUTATE, [])
        mutation = self._execute(run, loaded, host, prepared=prepared)
        if not isinstance(mutation, MutationRequested):
            return self.store.advance_phase(run.id, RunPhase.EMITTING)
        declared = self.connectors.operation(mutation.connector, mutation.operation)
        check_frozen(
            loaded.manifest.connectors,
            mutation.connector,
            mutation.operation,
            declared,
            workflow=run.workflow,
            version=run.workflow_version,
        )
        started = time.monotonic()
        try:
            if declared.kind is OperationKind.DURABLE:
                semantics = durable_semantics(
                    loaded.manifest.connectors, mutation.connector, mutation.operation, declared
                )
                done = self.durable.perform(
                    run, mutation, list(loaded.record.grants), declared, semantics
                )
            else:
                done = self.mutations.perform(run, mutation, list(loaded.record.grants))
        except KeepError as exc:
            self._settle_trace(run.id, error=exc, duration_s=time.monotonic() - started)
            raise
        self._settle_trace(run.id, run=done, duration_s=time.monotonic() - started)
        return done

    def _settle_trace(
        self,
        run_id: str,
        *,
        run: RunRecord | None = None,
        error: KeepError | None = None,
        duration_s: float,
    ) -> None:
        phases = self._traces.get(run_id)
        if phases and phases[-1].phase is HandlerPhase.MUTATE:
            phases[-1] = settle_mutation(phases[-1], run=run, error=error, duration_s=duration_s)

    def _invocation(self, run: RunRecord) -> Invocation | None:
        """The run's durable invocation, if the store keeps them and it has one."""
        if not isinstance(self.store, SupportsDurable):
            return None
        return self.store.invocation_for_run(run.id)

    def _next(self, run: RunRecord, loaded: _Loaded, consumer: ConsumerManifest) -> RunRecord:
        self._steps[run.id] = RunPhase.EMITTING
        assert run.prepare_result is not None
        prepared = run.prepare_result.model_dump(mode="json", by_alias=True)
        mutation_result = run.mutation_result or MutationNone()
        host = self._host(run, loaded, HandlerPhase.NEXT, consumer.publishes)
        output = self._execute(
            run,
            loaded,
            host,
            prepared=prepared,
            mutation_result=mutation_result.model_dump(mode="json", by_alias=True),
        )
        commit = self.store.commit_consumer_run(
            run.id,
            state=self._state_of(output, run.workflow),
            publishes=host.publishes,
            mutation_result=mutation_result,
            logs=self._take_logs(run.id),
            trace=self._traces.pop(run.id, []),
        )
        return commit.run

    # Phases in the sandbox

    def _host(
        self,
        run: RunRecord,
        loaded: _Loaded,
        phase: HandlerPhase,
        publishes: list[str] | None,
    ) -> PhaseHost:
        subscribed: list[str] = []
        if run.kind is HandlerKind.CONSUMER:
            subscribed = list(loaded.consumer(run.handler).subscribe)
        return PhaseHost(
            store=self.store,
            connectors=self.connectors,
            policy=self.policy_for(run.workflow),
            workflow=run.workflow,
            handler=run.handler,
            phase=phase,
            subscribed=subscribed,
            publishable=list(publishes if publishes is not None else loaded.manifest.topics),
            grants=list(loaded.record.grants),
            frozen=loaded.manifest.connectors,
            version=run.workflow_version,
            message_id_seed=f"{run.workflow}\x1f{run.handler}\x1f{chain_root(self.store, run)}",
        )

    def _run_manifest(self, loaded: _Loaded) -> Manifest:
        """The connectors a phase of `loaded` sees: those frozen at deploy (the live ones for a
        version recorded before); a connector that cannot be built now is transient."""
        if loaded.manifest.connectors is not None:
            return loaded.manifest.connectors
        try:
            return self.manifest
        except ConfigurationError as exc:
            raise TransientError(str(exc)) from exc

    def _execute(
        self,
        run: RunRecord,
        loaded: _Loaded,
        host: PhaseHost,
        *,
        state: JsonValue = None,
        has_state: bool = True,
        prepared: JsonValue = None,
        mutation_result: JsonValue = None,
    ) -> Completed | MutationRequested:
        """Run the host's phase in the sandbox; raise the failure it ended with."""
        request = PhaseRequest(
            source=loaded.version.source,
            handler=run.handler,
            phase=host.phase,
            state=state,
            has_state=has_state,
            prepared=prepared,
            mutation_result=mutation_result,
            manifest=self._run_manifest(loaded),
            subscribed_topics=tuple(host.subscribed),
            publish_topics=tuple(host.publishable),
            policy=self.policy_for(run.workflow),
            determinism=self._determinism(run),
            log_bytes_before=self._log_bytes.get(run.id, 0),
            filename=f"{run.workflow}@v{run.workflow_version}",
            call_sites=loaded.manifest.call_sites(run.handler, host.phase),
        )
        result = self.isolation.run(request, host)
        self._log_bytes[run.id] = request.log_bytes_before + result.trace.log_bytes
        self._logs.setdefault(run.id, []).extend(
            f"{host.phase.value} {line.level}: {line.text}" for line in result.trace.console
        )
        self._traces.setdefault(run.id, []).append(phase_trace(host.phase, result))
        error = result.outcome.to_error(request)
        if error is not None:
            raise error
        outcome = result.outcome
        assert isinstance(outcome, Completed | MutationRequested)
        if isinstance(outcome, MutationRequested) and host.phase is not HandlerPhase.MUTATE:
            name = f"{outcome.connector}.{outcome.operation}"
            raise PhaseViolation(
                f"ctx.{name} is a mutation; mutations are allowed only in mutate",
                operation=name,
                phase=host.phase.value,
            )
        return outcome

    def _take_logs(self, run_id: str) -> list[str]:
        """The run's log lines, and forget its console byte count (the attempt is over)."""
        self._log_bytes.pop(run_id, None)
        return self._logs.pop(run_id, [])

    def _determinism(self, run: RunRecord) -> Determinism | None:
        if not self.deterministic:
            return None
        seed = int.from_bytes(hashlib.sha256(run.id.encode()).digest()[:4], "big")
        return Determinism(clock=self.now(), seed=seed)

    def _state_of(
        self, output: Completed | MutationRequested, workflow: str
    ) -> JsonValue | Unchanged:
        if not isinstance(output, Completed) or not output.returned:
            return UNCHANGED
        check_size(output.result, "the returned state", self.policy_for(workflow))
        return output.result

    # Failure handling

    def _fail(self, run: RunRecord, exc: KeepError) -> RunRecord:
        if run.status is not RunStatus.ACTIVE:
            return run
        kind = classify(exc)
        entry = self.store.ledger_entry_for_run(run.id)
        if (
            isinstance(exc, StoreUnavailable)
            and entry is not None
            and entry.status is LedgerStatus.IN_FLIGHT
        ):
            return self._in_doubt(
                run, entry, f"the store failed while the mutation was in flight: {exc}"
            )
        error, resume_at = str(exc), None
        if kind is FailureKind.TRANSIENT:
            attempt = 1 + run.transient_failures
            backoff = self.policy_for(run.workflow).backoff
            limit = backoff.max_attempts
            if limit is not None and attempt > limit:
                kind = FailureKind.INTERNAL
                error = f"gave up after {limit} transient failures; the last: {exc}"
                if entry is not None and entry.status is LedgerStatus.IN_FLIGHT:
                    entry = self.store.record_mutation_failed(entry.id, error=error)
            else:
                delay = backoff.delay(attempt, unit_random=self.rng.random())
                if isinstance(exc, TransientError) and exc.retry_after is not None:
                    delay = max(delay, exc.retry_after)
                resume_at = self.now() + dt.timedelta(seconds=delay)
                self._logs.setdefault(run.id, []).append(
                    f"{TRANSIENT_MARK}{attempt}: {exc}; resuming at {resume_at.isoformat()}"
                )
        may_have_happened = (
            entry is not None and entry.status is not LedgerStatus.FAILED
        ) or isinstance(run.mutation_result, MutationApplied | MutationSkipped)
        decision = route(kind, mutation_may_have_happened=may_have_happened)
        failed = self._pause(
            run,
            decision.status,
            error=error,
            failure=kind,
            resume_at=resume_at,
            release_reservations=decision.release_reservations and run.kind is HandlerKind.CONSUMER,
            permission=exc.permission if isinstance(exc, PermissionDenied) else None,
        )
        if decision.escalate and isinstance(exc, PermissionDenied):
            self.observer.escalated(
                Escalation(
                    run_id=run.id,
                    workflow=run.workflow,
                    reason=str(exc),
                    actions=[f"grant {exc.permission}" if exc.permission else "grant"],
                    ledger_id=entry.id if entry else None,
                    created_at=self.now(),
                )
            )
        return failed

    def _in_doubt(self, run: RunRecord, entry: LedgerEntry, error: str) -> RunRecord:
        """Pause a run whose mutation may or may not have happened (the host lost track of
        it: a crash, or the store failed around the call); its entry is reconciled at once,
        never re-issued blindly."""
        if entry.status is LedgerStatus.IN_FLIGHT:
            self.store.record_needs_reconcile(entry.id, next_reconcile_at=self.now(), error=error)
        return self._pause(
            run, RunStatus.PAUSED_RECONCILIATION, error=error, failure=FailureKind.INDETERMINATE
        )

    def _begin(self, loaded: _Loaded, record: HandlerRecord, kind: HandlerKind) -> RunRecord:
        run = self.store.begin_run(
            loaded.record.name,
            record.name,
            kind,
            input_state=record.state if record.has_state else None,
            version=loaded.version.version,
        )
        self._begun[run.id] = record
        return run

    def _handler_at_begin(self, run: RunRecord) -> HandlerRecord:
        """The handler as `_begin` read it for this run (nothing else changes its state
        while the run is active), or as stored now for a run begun elsewhere."""
        record = self._begun.pop(run.id, None)
        return record or self.store.get_handler(run.workflow, run.handler)

    def _pause(
        self,
        run: RunRecord,
        status: RunStatus,
        *,
        error: str,
        failure: FailureKind,
        resume_at: dt.datetime | None = None,
        release_reservations: bool = False,
        permission: str | None = None,
    ) -> RunRecord:
        """Move an active run to `status`, saving the logs its phases captured.

        A run stopped in a step it had not recorded reaching (`mutate` from
        ``prepared``, `next` from ``prepared`` or ``mutated``: the successful path
        writes those phases inside its checkpoints) is first moved to that step's
        phase, so its phase still says where it stopped.
        """
        step = self._steps.pop(run.id, None)
        if step is not None:
            stored = self.store.get_run(run.id)
            if stored.status is RunStatus.ACTIVE and _PHASE_ORDER.index(step) > _PHASE_ORDER.index(
                stored.phase
            ):
                self.store.advance_phase(run.id, step)
        return self.store.set_run_status(
            run.id,
            status,
            error=error,
            failure=failure,
            resume_at=resume_at,
            logs=self._take_logs(run.id),
            release_reservations=release_reservations,
            permission=permission,
            trace=self._traces.pop(run.id, []),
        )

    # Helpers

    def _load(self, workflow: str, version: int | None = None) -> _Loaded:
        record = self.store.get_workflow(workflow)
        number = version or record.version
        key = (workflow, number)
        if key not in self._versions:
            stored = self.store.get_workflow_version(workflow, number)
            manifest = WorkflowManifest.model_validate(stored.manifest)
            self._versions[key] = _Loaded(record, stored, manifest)
        cached = self._versions[key]
        return _Loaded(record, cached.version, cached.manifest)
