"""Commit points of runs: begin, prepare, advance, status, and the two commits."""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from typing import Any

from pydantic import JsonValue

from keep_sdk.errors import ActiveRunExists, EventNotPending, StoreConflict
from keep_sdk.model import (
    EventStatus,
    FailureKind,
    HandlerKind,
    LedgerEntry,
    LedgerStatus,
    MutationSkipped,
    PhaseTrace,
    PrepareResult,
    RunPhase,
    RunRecord,
    RunStatus,
)
from keep_sdk.stores import _rules as rules
from keep_sdk.stores._commit._core import StoreCore
from keep_sdk.stores._commit._events import publish
from keep_sdk.stores._commit._ledger import insert_intent, settle
from keep_sdk.stores._commit._workflows import update_handler
from keep_sdk.stores._commit.work import (
    Work,
    in_utc,
    no_handler,
    require_handler,
    require_run,
    require_workflow,
)
from keep_sdk.stores._models import (
    UNCHANGED,
    BegunRun,
    HandlerRecord,
    MutationIntent,
    Publication,
    PublishResult,
    RunCommit,
    Unchanged,
)
from keep_sdk.stores._protocol import MutationResultValue
from keep_sdk.stores.faults import FaultPoint

__all__ = ["RunPoints"]


class RunPoints(StoreCore):
    """begin_run, save_prepare_result, advance_phase, set_run_status and the commits."""

    def begin_run(
        self,
        workflow: str,
        handler: str,
        kind: HandlerKind,
        *,
        input_state: JsonValue = None,
        retry_of: str | None = None,
        phase: RunPhase = RunPhase.PREPARING,
        version: int | None = None,
    ) -> RunRecord:
        with self._commit() as w:
            return _begin(
                w,
                workflow,
                handler,
                kind,
                run_id=rules.new_id("run"),
                check_active=True,
                input_state=input_state,
                retry_of=retry_of,
                phase=phase,
                version=version,
            )[0]

    def begin_consumer_run(
        self,
        workflow: str,
        handler: str,
        *,
        run_id: str,
        prepare_result: PrepareResult | None,
        phase: RunPhase = RunPhase.PREPARED,
        intent: MutationIntent | None = None,
        input_state: JsonValue = None,
        version: int | None = None,
    ) -> BegunRun:
        try:
            return self._begin_consumer_run(
                workflow,
                handler,
                run_id=run_id,
                prepare_result=prepare_result,
                phase=phase,
                intent=intent,
                input_state=input_state,
                version=version,
            )
        except ActiveRunExists as refused:
            with self._read() as tx:
                holder = tx.active_run(workflow)
            if holder is None:
                raise
            raise rules.active_run_exists(workflow, holder) from refused

    def _begin_consumer_run(
        self,
        workflow: str,
        handler: str,
        *,
        run_id: str,
        prepare_result: PrepareResult | None,
        phase: RunPhase,
        intent: MutationIntent | None,
        input_state: JsonValue,
        version: int | None,
    ) -> BegunRun:
        """The merged begin; it leaves the refusal of a second active run to
        `Transaction.insert_run`, whose error need not name the run in the way."""
        with self._commit() as w:
            run, record = _begin(
                w,
                workflow,
                handler,
                HandlerKind.CONSUMER,
                run_id=run_id,
                check_active=False,
                input_state=input_state,
                retry_of=None,
                phase=RunPhase.MUTATING
                if intent is not None
                else (phase if prepare_result is not None else RunPhase.PREPARING),
                version=version,
                prepare_result=prepare_result,
            )
            if prepare_result is None:
                return BegunRun(run=run)
            _reserve(w, run, prepare_result, record)
            if intent is None:
                return BegunRun(run=run)
            entry = insert_intent(
                w,
                run,
                first=True,
                connector=intent.connector,
                operation=intent.operation,
                params=intent.params,
                idempotency_key=intent.idempotency_key,
                ui_title=intent.ui_title,
            )
            return BegunRun(run=run, entry=entry)

    def save_prepare_result(self, run_id: str, result: PrepareResult) -> RunRecord:
        with self._commit() as w:
            return _save_prepare(w, require_run(w.tx, run_id), result, RunPhase.PREPARED)

    def advance_phase(self, run_id: str, phase: RunPhase) -> RunRecord:
        with self._commit() as w:
            run = require_run(w.tx, run_id)
            rules.check_advance(run, phase)
            return w.update_run(run, run.model_copy(update={"phase": phase, "updated_at": w.now}))

    def set_run_status(
        self,
        run_id: str,
        status: RunStatus,
        *,
        error: str | None = None,
        failure: FailureKind | None = None,
        resume_at: dt.datetime | None = None,
        release_reservations: bool = False,
        logs: Sequence[str] = (),
        permission: str | None = None,
        trace: Sequence[PhaseTrace] = (),
    ) -> RunRecord:
        with self._commit() as w:
            run = require_run(w.tx, run_id)
            rules.check_status_change(run, status)
            if release_reservations:
                rules.check_release(run, w.tx.ledger_entry_for_run(run.id))
            if status is RunStatus.ACTIVE:
                holder = w.tx.active_run(run.workflow)
                if holder is not None:
                    raise rules.active_run_exists(run.workflow, holder)
            transient = 1 if status is RunStatus.PAUSED_TRANSIENT else 0
            updated = w.update_run(
                run,
                run.model_copy(
                    update={
                        "status": status,
                        "error": error,
                        "failure": failure,
                        "resume_at": in_utc(resume_at),
                        "logs": [*run.logs, *logs],
                        "trace": [*run.trace, *trace],
                        "transient_failures": run.transient_failures + transient,
                        "waiting_permission": permission,
                        "updated_at": w.now,
                    }
                ),
            )
            if release_reservations:
                w.fault(FaultPoint.SET_RUN_STATUS)
                _move_reservations(w, run.id, None)
            return updated

    def commit_consumer_run(
        self,
        run_id: str,
        *,
        state: JsonValue | Unchanged = UNCHANGED,
        publishes: Sequence[Publication] = (),
        mutation_result: MutationResultValue | None = None,
        logs: Sequence[str] = (),
        trace: Sequence[PhaseTrace] = (),
    ) -> RunCommit:
        with self._commit() as w:
            return _commit_consumer(
                w, require_run(w.tx, run_id), state, publishes, mutation_result, logs, trace
            )

    def commit_applied_consumer_run(
        self,
        run_id: str,
        *,
        ledger_id: str,
        result: JsonValue,
        state: JsonValue | Unchanged = UNCHANGED,
        publishes: Sequence[Publication] = (),
        logs: Sequence[str] = (),
        trace: Sequence[PhaseTrace] = (),
    ) -> RunCommit:
        with self._commit() as w:
            entry, stored = settle(
                w, ledger_id, LedgerStatus.APPLIED, result=result, move_run=False
            )
            if stored.id != run_id:
                raise StoreConflict(f"ledger entry {ledger_id} is not the mutation of run {run_id}")
            applied = stored.model_copy(update=rules.applied_run_changes(stored, entry.result))
            return _commit_consumer(
                w,
                applied,
                state,
                publishes,
                applied.mutation_result,
                logs,
                trace,
                stored=stored,
                entry=entry,
            )

    def commit_producer_run(
        self,
        run_id: str,
        *,
        state: JsonValue | Unchanged = UNCHANGED,
        publishes: Sequence[Publication] = (),
        next_run_at: dt.datetime | None,
        logs: Sequence[str] = (),
        trace: Sequence[PhaseTrace] = (),
    ) -> RunCommit:
        with self._commit() as w:
            run = require_run(w.tx, run_id)
            rules.check_producer_commit(run)
            kept = {} if state is UNCHANGED else {"state": state, "has_state": True}
            _save_state(w, run, next_run_at=in_utc(next_run_at), **kept)
            w.fault(FaultPoint.COMMIT_PRODUCER_STATE)
            published = _publish_all(w, run, publishes, FaultPoint.COMMIT_PRODUCER_PUBLISH)
            committed = w.update_run(run, _committed(w, run, state, logs, None, trace))
            return RunCommit(run=committed, published=published)


def _save_state(w: Work, run: RunRecord, **changes: Any) -> None:
    """Write `changes` to `run`'s handler, stamped `now`, in one write (`NotFound` if the
    handler is gone)."""
    if not w.tx.write_handler(run.workflow, run.handler, {**changes, "updated_at": w.now}):
        raise no_handler(run.workflow, run.handler)


def _publish_all(
    w: Work, run: RunRecord, publishes: Sequence[Publication], point: FaultPoint
) -> list[PublishResult]:
    published = []
    for publication in publishes:
        published.append(publish(w, run.workflow, publication, run.id))
        w.fault(point)
    return published


def _committed(
    w: Work,
    run: RunRecord,
    state: JsonValue | Unchanged,
    logs: Sequence[str],
    mutation_result: MutationResultValue | None,
    trace: Sequence[PhaseTrace],
) -> RunRecord:
    changes: dict[str, Any] = {
        "phase": RunPhase.COMMITTED,
        "status": RunStatus.COMMITTED,
        "output_state": None if state is UNCHANGED else state,
        "logs": [*run.logs, *logs],
        "trace": [*run.trace, *trace],
        "updated_at": w.now,
    }
    if mutation_result is not None:
        changes["mutation_result"] = mutation_result
    return run.model_copy(update=changes)


def _move_reservations(w: Work, old: str, new: str | None) -> None:
    """Hand `old`'s reservations to run `new`, or release them (pending, attempt + 1)."""
    for event in w.tx.reserved_events(old):
        if new is None:
            changes: dict[str, Any] = {
                "status": EventStatus.PENDING,
                "reserved_by": None,
                "attempt": event.attempt + 1,
            }
        else:
            changes = {"reserved_by": new}
        w.update_event(
            event,
            event.model_copy(update={**changes, "updated_at": w.now}),
            StoreConflict(f"event {event.id} changed while its reservation moved"),
        )


def _begin(
    w: Work,
    workflow: str,
    handler: str,
    kind: HandlerKind,
    *,
    run_id: str,
    check_active: bool,
    input_state: JsonValue,
    retry_of: str | None,
    phase: RunPhase,
    version: int | None,
    prepare_result: PrepareResult | None = None,
) -> tuple[RunRecord, HandlerRecord | None]:
    """Insert a new active run (refused beside another active run), taking over or releasing
    the reservations of the run it retries; the run and its handler as read.

    Without `check_active` the insert itself refuses a second active run (the
    `Transaction.insert_run` contract), which saves a query."""
    wf = require_workflow(w.tx, workflow, lock=True)
    record = w.tx.handler(workflow, handler)
    rules.check_begin(
        workflow=workflow,
        paused=wf.paused,
        active_run=w.tx.active_run(workflow) if check_active else None,
        handler_kind=record.kind if record and record.version == wf.version else None,
        handler=handler,
        kind=kind,
    )
    old = require_run(w.tx, retry_of) if retry_of is not None else None
    ledger = w.tx.ledger_entry_for_run(old.id) if old else None
    begins_at = phase if prepare_result is None else RunPhase.PREPARING
    plan = rules.plan_retry(old, handler=handler, workflow=workflow, phase=begins_at, ledger=ledger)
    run = w.insert_run(
        RunRecord(
            id=run_id,
            workflow=workflow,
            workflow_version=version or wf.version,
            handler=handler,
            kind=kind,
            phase=phase,
            retry_of=retry_of,
            prepare_result=plan.prepare_result if plan else prepare_result,
            mutation_result=plan.mutation_result if plan else None,
            input_state=input_state,
            created_at=w.now,
            updated_at=w.now,
        )
    )
    if old is not None and plan is not None:
        w.fault(FaultPoint.BEGIN_RUN)
        take_over = plan.reservations is rules.ReservationMove.TAKE_OVER
        _move_reservations(w, old.id, run.id if take_over else None)
    return run, record


def _save_prepare(w: Work, run: RunRecord, result: PrepareResult, phase: RunPhase) -> RunRecord:
    """Save `run`'s prepare result at `phase`, reserving its events (see `_reserve`)."""
    rules.check_save_prepare(run)
    updated = w.update_run(
        run,
        run.model_copy(update={"prepare_result": result, "phase": phase, "updated_at": w.now}),
    )
    _reserve(w, updated, result)
    return updated


def _reserve(
    w: Work, run: RunRecord, result: PrepareResult, handler: HandlerRecord | None = None
) -> None:
    """Reserve the events `result` names for `run` (all pending, or nothing and
    `EventNotPending`) and save its wakeAt on the handler."""
    requested = result.reserved_ids
    for topic, ids in requested.items():
        if w.tx.reserve_events(run.id, run.workflow, topic, ids, w.now) != len(ids):
            found = [
                event
                for name, named in requested.items()
                for event in w.tx.events_by_keys(run.workflow, name, named)
            ]
            rules.check_reservable(run, requested, found)
            raise EventNotPending(
                f"an event of topic {topic} was reserved by another run meanwhile; "
                "nothing was reserved"
            )
        w.fault(FaultPoint.SAVE_PREPARE_EVENT)
    w.fault(FaultPoint.SAVE_PREPARE_RUN)
    record = handler or require_handler(w.tx, run.workflow, run.handler)
    if record.wake_at != result.wake_at:
        update_handler(w, record, wake_at=result.wake_at)


def _commit_consumer(
    w: Work,
    run: RunRecord,
    state: JsonValue | Unchanged,
    publishes: Sequence[Publication],
    mutation_result: MutationResultValue | None,
    logs: Sequence[str],
    trace: Sequence[PhaseTrace],
    *,
    stored: RunRecord | None = None,
    entry: LedgerEntry | None = None,
) -> RunCommit:
    """Consume (or skip) `run`'s reservations, save its state and publishes, commit it.

    `stored` is the run as the database holds it when `run` carries changes not written
    yet (its applied mutation); `entry` its ledger entry when this transaction has it."""
    ledger = entry if entry is not None else w.tx.ledger_entry_for_run(run.id)
    effective = rules.check_commit_consumer(run, ledger, mutation_result)
    final = EventStatus.SKIPPED if isinstance(effective, MutationSkipped) else EventStatus.CONSUMED
    if w.tx.finish_reservations(run.id, final, w.now):
        w.fault(FaultPoint.COMMIT_CONSUMER_EVENT)
    if state is not UNCHANGED:
        _save_state(w, run, state=state, has_state=True)
    w.fault(FaultPoint.COMMIT_CONSUMER_STATE)
    published = _publish_all(w, run, publishes, FaultPoint.COMMIT_CONSUMER_PUBLISH)
    committed = w.update_run(stored or run, _committed(w, run, state, logs, effective, trace))
    return RunCommit(run=committed, published=published)
