"""The run driver: one producer or consumer run through its phases, and its failures.

A consumer run moves through the phases of chapter 06b with a durable
checkpoint after each step (see `keep_sdk.runtime.Runtime`). `Driver.drive`
runs what is left of a run and routes whatever it raises: failures change
the run's status, never its phase (see `failures.route`). The mutate handler
never runs again once its mutation was handed to the host.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import hashlib
import random
import re
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from pydantic import JsonValue

from keep_sdk.connectors import ConnectorSet
from keep_sdk.contract.workflow import ConsumerManifest
from keep_sdk.errors import (
    ConfigurationError,
    EventNotPending,
    InternalError,
    KeepError,
    LogicError,
    NotFound,
    PermissionDenied,
    PhaseViolation,
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
    PrepareResult,
    RunPhase,
    RunRecord,
    RunStatus,
)
from keep_sdk.runtime._deployer import Deployer, LoadedVersion
from keep_sdk.runtime._failures import classify, route
from keep_sdk.runtime._host import PhaseHost
from keep_sdk.runtime._ledger import MutationDesk, chain_root
from keep_sdk.runtime._observer import Observer
from keep_sdk.runtime._schedules import next_run_at
from keep_sdk.runtime._tracing import phase_trace, settle_mutation
from keep_sdk.runtime.checks import check_prepare_result, check_size
from keep_sdk.runtime.durable import DurableDesk, durable_failure_escalation, logged_bytes
from keep_sdk.runtime.frozen import check_frozen, durable_semantics
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
    MutationIntent,
    Store,
    SupportsDurable,
    SupportsFewerCheckpoints,
    Unchanged,
)

if TYPE_CHECKING:
    from keep_sdk.contract.durable import Invocation
    from keep_sdk.contract.manifest import Manifest

__all__ = ["TRANSIENT_MARK", "Driver"]

_PHASE_ORDER = list(RunPhase)

TRANSIENT_MARK = "host: transient failure "
"""Prefix of the run log line written for each transient failure, for people reading the log;
the backoff counts `RunRecord.transient_failures`."""


@dataclass
class _Unwritten:
    """A consumer run not yet in the store: its first checkpoint (`begin_consumer_run`)
    writes it with its prepare result and its intent once `mutate` asked for one."""

    store: SupportsFewerCheckpoints
    workflow: str
    handler: str
    input_state: JsonValue
    version: int
    prepare_result: PrepareResult | None = None


class _BeginRefused(Exception):
    """The store refused to begin the run (see `Store.begin_run`): nothing was written,
    and `error` is what `Driver.start` raises."""

    def __init__(self, error: KeepError) -> None:
        super().__init__(str(error))
        self.error = error


def _describe(exc: Exception) -> str:
    """One line about an unexpected host exception: its class and the first line of its
    text, without what a database driver appends (the SQL, its parameters)."""
    first = str(exc).split("\n", 1)[0]
    first = re.sub(r"^\([\w.]+\) ", "", first)
    if len(first) > 500:
        first = first[:500] + "…[truncated]"
    return f"{type(exc).__name__}: {first}"


def _reserve_failed(handler: str, exc: KeepError) -> LogicError:
    return LogicError(
        f"prepare() of {handler} reserved events it cannot have: {exc}. Reserve "
        "only events returned by ctx.peek or ctx.getByIds that are still pending"
    )


class Driver:
    """The phase machine and failure routing of one runtime (see `keep_sdk.runtime.Runtime`);
    it reads versions and policies from `deployer`."""

    def __init__(
        self,
        store: Store,
        connectors: ConnectorSet,
        *,
        deployer: Deployer,
        policy: HostPolicy,
        isolation: Isolation,
        now: Callable[[], dt.datetime],
        rng: random.Random,
        deterministic: bool,
        observer: Observer,
    ) -> None:
        self.store = store
        self._fewer = store if isinstance(store, SupportsFewerCheckpoints) else None
        self.connectors = connectors
        self.deployer = deployer
        self.policy_for = deployer.policy_for
        self.isolation = isolation
        self.now = now
        self.rng = rng
        self.deterministic = deterministic
        self.observer = observer
        self.logs: dict[str, list[str]] = {}
        self._begun: dict[str, HandlerRecord] = {}
        self._steps: dict[str, RunPhase] = {}
        self._log_bytes: dict[str, int] = {}
        self._traces: dict[str, list[PhaseTrace]] = {}
        self._unwritten: dict[str, _Unwritten] = {}
        self.mutations = MutationDesk(
            store=store,
            connectors=connectors,
            policy=self.policy_for,
            observer=observer,
            now=now,
            rng=rng,
            pause=self.pause,
        )
        self.durable = DurableDesk(
            store=store,
            connectors=connectors,
            policy=policy,
            now=now,
            take_logs=lambda run_id: self.logs.pop(run_id, []),
        )

    def drive(
        self, run: RunRecord, step: Callable[[RunRecord], RunRecord] | None = None
    ) -> RunRecord:
        """Run `step` (by default: the rest of the run) and route whatever it raises."""
        if step is None:
            step = self._producer if run.kind is HandlerKind.PRODUCER else self._consumer
        try:
            return step(run)
        except _BeginRefused as refused:
            raise refused.error from None
        except KeepError as exc:
            return self.fail(self._written(run.id), exc)
        except Exception as exc:
            internal = InternalError(f"host error in run {run.id}: {_describe(exc)}")
            internal.__cause__ = exc
            return self.fail(self._written(run.id), internal)
        finally:
            self._begun.pop(run.id, None)
            self._steps.pop(run.id, None)
            self._traces.pop(run.id, None)
            self._unwritten.pop(run.id, None)
            self.mutations.deferred.pop(run.id, None)

    def _written(self, run_id: str) -> RunRecord:
        """The run as stored, after writing what its merged checkpoints still held: a run
        not yet begun is begun (with its prepare result when it has one), an applied
        mutation whose commit did not happen is recorded applied. Then it fails as a run
        under the five checkpoints would have."""
        unwritten = self._unwritten.get(run_id)
        if unwritten is not None and self._stored(run_id):
            self._unwritten.pop(run_id, None)
            unwritten = None
        if unwritten is not None:
            try:
                self._begin_unwritten(
                    run_id, unwritten, unwritten.prepare_result, RunPhase.PREPARED
                )
            except _BeginRefused as refused:
                raise refused.error from None
            except LogicError:
                pass
        deferred = self.mutations.deferred.pop(run_id, None)
        if deferred is not None:
            with contextlib.suppress(KeepError):
                self.store.record_mutation_applied(*deferred)
        return self.store.get_run(run_id)

    def _stored(self, run_id: str) -> bool:
        """Whether the store holds `run_id`: a begin whose commit happened though its answer
        was lost (the connection dropped after COMMIT) must not be begun twice."""
        try:
            self.store.get_run(run_id)
        except NotFound:
            return False
        return True

    def _begin_unwritten(
        self,
        run_id: str,
        unwritten: _Unwritten,
        prepare_result: PrepareResult | None,
        phase: RunPhase,
    ) -> RunRecord:
        """Write the unwritten run (begin, prepare result) at `phase`; a refusal to begin
        is `_BeginRefused`; events that cannot be reserved are the script's `LogicError`."""
        try:
            written = unwritten.store.begin_consumer_run(
                unwritten.workflow,
                unwritten.handler,
                run_id=run_id,
                prepare_result=prepare_result,
                phase=phase if prepare_result is not None else RunPhase.PREPARING,
                input_state=unwritten.input_state,
                version=unwritten.version,
            ).run
            self._unwritten.pop(run_id, None)
            return written
        except (EventNotPending, NotFound) as exc:
            if prepare_result is None:
                raise _BeginRefused(exc) from None
            self._begin_unwritten(run_id, unwritten, None, RunPhase.PREPARING)
            self._steps.pop(run_id, None)
            raise _reserve_failed(unwritten.handler, exc) from None
        except StoreUnavailable:
            raise
        except KeepError as exc:
            self._unwritten.pop(run_id, None)
            raise _BeginRefused(exc) from None

    def _producer(self, run: RunRecord, loaded: LoadedVersion | None = None) -> RunRecord:
        loaded = loaded or self.deployer.load(run.workflow, run.workflow_version)
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

    def _consumer(self, run: RunRecord, loaded: LoadedVersion | None = None) -> RunRecord:
        loaded = loaded or self.deployer.load(run.workflow, run.workflow_version)
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

    def _prepare(
        self, run: RunRecord, loaded: LoadedVersion, consumer: ConsumerManifest
    ) -> RunRecord:
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
        unwritten = self._unwritten.get(run.id)
        if unwritten is not None:
            unwritten.prepare_result = result
            return run.model_copy(update={"prepare_result": result, "phase": RunPhase.PREPARED})
        try:
            saved = self.store.save_prepare_result(run.id, result)
        except (EventNotPending, NotFound) as exc:
            raise _reserve_failed(run.handler, exc) from None
        return saved

    def _mutate(
        self, run: RunRecord, loaded: LoadedVersion, consumer: ConsumerManifest
    ) -> RunRecord:
        self._steps[run.id] = RunPhase.MUTATING
        if run.phase is RunPhase.MUTATING:
            entry = self.store.ledger_entry_for_run(run.id)
            if entry is not None:
                invocation = self.invocation(run)
                if invocation is not None and entry.status is LedgerStatus.IN_FLIGHT:
                    return self.durable.start(run, entry, invocation)
                return self.mutations.settle(run, entry)
        assert run.prepare_result is not None
        prepared = run.prepare_result.model_dump(mode="json", by_alias=True)
        host = self._host(run, loaded, HandlerPhase.MUTATE, [])
        mutation = self._execute(run, loaded, host, prepared=prepared)
        if not isinstance(mutation, MutationRequested):
            if run.id in self._unwritten:
                return self._write_begin(run, RunPhase.EMITTING)[0]
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
                if run.id in self._unwritten:
                    run = self._write_begin(run, RunPhase.PREPARED)[0]
                semantics = durable_semantics(
                    loaded.manifest.connectors, mutation.connector, mutation.operation, declared
                )
                done = self.durable.perform(
                    run, mutation, list(loaded.record.grants), declared, semantics
                )
            else:
                intent = self.mutations.intent(run, mutation, list(loaded.record.grants))
                if run.id in self._unwritten:
                    run, written = self._write_begin(run, RunPhase.MUTATING, intent)
                    assert written is not None
                    entry = written
                else:
                    entry = self.store.record_mutation_intent(run.id, **intent.model_dump())
                done = self.mutations.issue(run, entry, defer=True)
        except KeepError as exc:
            self._settle_trace(run.id, error=exc, duration_s=time.monotonic() - started)
            raise
        self._settle_trace(run.id, run=done, duration_s=time.monotonic() - started)
        return done

    def _write_begin(
        self, run: RunRecord, phase: RunPhase, intent: MutationIntent | None = None
    ) -> tuple[RunRecord, LedgerEntry | None]:
        """The first checkpoint of an unwritten run: begin, prepare result (and intent);
        the run as written and its intent's ledger entry."""
        unwritten = self._unwritten[run.id]
        assert run.prepare_result is not None
        if intent is None:
            return self._begin_unwritten(run.id, unwritten, run.prepare_result, phase), None
        try:
            begun = unwritten.store.begin_consumer_run(
                unwritten.workflow,
                unwritten.handler,
                run_id=run.id,
                prepare_result=run.prepare_result,
                intent=intent,
                input_state=unwritten.input_state,
                version=unwritten.version,
            )
        except (EventNotPending, NotFound) as exc:
            self._begin_unwritten(run.id, unwritten, None, RunPhase.PREPARING)
            self._steps.pop(run.id, None)
            raise _reserve_failed(unwritten.handler, exc) from None
        except StoreUnavailable:
            raise
        except KeepError as exc:
            self._unwritten.pop(run.id, None)
            raise _BeginRefused(exc) from None
        self._unwritten.pop(run.id, None)
        return begun.run, begun.entry

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

    def invocation(self, run: RunRecord) -> Invocation | None:
        """The run's durable invocation, if the store keeps them and it has one."""
        if not isinstance(self.store, SupportsDurable):
            return None
        return self.store.invocation_for_run(run.id)

    def _next(self, run: RunRecord, loaded: LoadedVersion, consumer: ConsumerManifest) -> RunRecord:
        if run.id in self._unwritten:
            run = self._write_begin(run, RunPhase.PREPARED)[0]
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
        state = self._state_of(output, run.workflow)
        deferred = self.mutations.deferred.get(run.id)
        if deferred is not None and self._fewer is not None:
            ledger_id, result = deferred
            commit = self._fewer.commit_applied_consumer_run(
                run.id,
                ledger_id=ledger_id,
                result=result,
                state=state,
                publishes=host.publishes,
                logs=self._take_logs(run.id),
                trace=self._traces.pop(run.id, []),
            )
            del self.mutations.deferred[run.id]
            return commit.run
        commit = self.store.commit_consumer_run(
            run.id,
            state=state,
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
        loaded: LoadedVersion,
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

    def _run_manifest(self, loaded: LoadedVersion) -> Manifest:
        """The connectors a phase of `loaded` sees: those frozen at deploy (the live ones for a
        version recorded before); a connector that cannot be built now is transient."""
        if loaded.manifest.connectors is not None:
            return loaded.manifest.connectors
        try:
            return self.deployer.manifest
        except ConfigurationError as exc:
            raise TransientError(str(exc)) from exc

    def _execute(
        self,
        run: RunRecord,
        loaded: LoadedVersion,
        host: PhaseHost,
        *,
        state: JsonValue = None,
        has_state: bool = True,
        prepared: JsonValue = None,
        mutation_result: JsonValue = None,
    ) -> Completed | MutationRequested:
        """Run the host's phase in the sandbox; raise the failure it ended with."""
        if loaded.unchecked is not None:
            raise LogicError(loaded.unchecked)
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
            log_bytes_before=self._log_bytes.get(run.id, logged_bytes(run)),
            filename=f"{run.workflow}@v{run.workflow_version}",
            call_sites=loaded.manifest.call_sites(run.handler, host.phase),
        )
        result = self.isolation.run(request, host)
        self._log_bytes[run.id] = request.log_bytes_before + result.trace.log_bytes
        self.logs.setdefault(run.id, []).extend(
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
        return self.logs.pop(run_id, [])

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

    def fail(self, run: RunRecord, exc: KeepError) -> RunRecord:
        if run.status is not RunStatus.ACTIVE:
            return run
        kind = classify(exc)
        entry = self.store.ledger_entry_for_run(run.id)
        if (
            isinstance(exc, StoreUnavailable)
            and entry is not None
            and entry.status is LedgerStatus.IN_FLIGHT
        ):
            return self.in_doubt(
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
                self.logs.setdefault(run.id, []).append(
                    f"{TRANSIENT_MARK}{attempt}: {exc}; resuming at {resume_at.isoformat()}"
                )
        durable_failed = (
            entry is not None
            and entry.status is LedgerStatus.FAILED
            and self.invocation(run) is not None
        )
        may_have_happened = (
            (entry is not None and entry.status is not LedgerStatus.FAILED)
            or isinstance(run.mutation_result, MutationApplied | MutationSkipped)
            or durable_failed
        )
        decision = route(kind, mutation_may_have_happened=may_have_happened)
        failed = self.pause(
            run,
            decision.status,
            error=error,
            failure=kind,
            resume_at=resume_at,
            release_reservations=decision.release_reservations and run.kind is HandlerKind.CONSUMER,
            permission=exc.permission if isinstance(exc, PermissionDenied) else None,
        )
        if durable_failed and entry is not None:
            self.observer.escalated(durable_failure_escalation(failed, entry, error, self.now()))
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

    def in_doubt(self, run: RunRecord, entry: LedgerEntry, error: str) -> RunRecord:
        """Pause a run whose mutation may or may not have happened (the host lost track of
        it: a crash, or the store failed around the call); its entry is reconciled at once,
        never re-issued blindly."""
        if entry.status is LedgerStatus.IN_FLIGHT:
            self.store.record_needs_reconcile(entry.id, next_reconcile_at=self.now(), error=error)
        return self.pause(
            run, RunStatus.PAUSED_RECONCILIATION, error=error, failure=FailureKind.INDETERMINATE
        )

    def start(self, loaded: LoadedVersion, record: HandlerRecord, kind: HandlerKind) -> RunRecord:
        """Begin a run of the handler `record` on `loaded` and drive it; return it as it ended.

        A consumer run on a store that merges checkpoints is written first by
        `begin_consumer_run`, after its prepare (and mutate) phases ran: until then it
        exists only here, and a crash leaves nothing behind.
        """
        if kind is HandlerKind.CONSUMER and self._fewer is not None:
            now = self.now()
            unbegun = RunRecord(
                id=f"run_{uuid.uuid4().hex}",
                workflow=loaded.record.name,
                workflow_version=loaded.version.version,
                handler=record.name,
                kind=kind,
                phase=RunPhase.PREPARING,
                input_state=record.state if record.has_state else None,
                created_at=now,
                updated_at=now,
            )
            self._unwritten[unbegun.id] = _Unwritten(
                store=self._fewer,
                workflow=unbegun.workflow,
                handler=unbegun.handler,
                input_state=unbegun.input_state,
                version=unbegun.workflow_version,
            )
            self._begun[unbegun.id] = record
            return self.drive(unbegun, lambda r: self._consumer(r, loaded))
        run = self.store.begin_run(
            loaded.record.name,
            record.name,
            kind,
            input_state=record.state if record.has_state else None,
            version=loaded.version.version,
        )
        self._begun[run.id] = record
        if kind is HandlerKind.PRODUCER:
            return self.drive(run, lambda r: self._producer(r, loaded))
        return self.drive(run, lambda r: self._consumer(r, loaded))

    def _handler_at_begin(self, run: RunRecord) -> HandlerRecord:
        """The handler as `start` read it for this run (nothing else changes its state
        while the run is active), or as stored now for a run begun elsewhere."""
        record = self._begun.pop(run.id, None)
        return record or self.store.get_handler(run.workflow, run.handler)

    def pause(
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
