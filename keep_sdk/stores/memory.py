"""The in-memory reference store: the semantics every other store is held to.

Thread-safe (one lock); every method is atomic because each write is journaled
and undone if the method raises, including from the fault hook.
"""

from __future__ import annotations

import bisect
import datetime as dt
import threading
from collections.abc import Callable, Iterator, MutableMapping, Sequence
from contextlib import contextmanager
from typing import Any

from pydantic import JsonValue

from keep_sdk.errors import EventNotPending, NotFound
from keep_sdk.model import (
    Event,
    EventStatus,
    FailureKind,
    HandlerKind,
    LedgerEntry,
    LedgerStatus,
    MutationSkipped,
    PrepareResult,
    RunPhase,
    RunRecord,
    RunStatus,
)
from keep_sdk.stores import _rules as rules
from keep_sdk.stores._models import (
    UNCHANGED,
    AuditEntry,
    ConsumerWake,
    HandlerRecord,
    HandlerSpec,
    Lease,
    Publication,
    PublishOutcome,
    PublishResult,
    Resolution,
    RunCommit,
    Unchanged,
    WakeReason,
    WorkflowRecord,
    WorkflowVersion,
)
from keep_sdk.stores._protocol import Clock, FaultHook, MutationResultValue, utc_now

__all__ = ["MemoryStore"]

_TopicKey = tuple[str, str]


class _Journal:
    """Undo actions for the writes of one method call, replayed backwards on failure."""

    def __init__(self) -> None:
        self._undo: list[Callable[[], None]] = []

    def set(self, mapping: MutableMapping[Any, Any], key: Any, value: Any) -> None:
        if key in mapping:
            old = mapping[key]
            self._undo.append(lambda: mapping.__setitem__(key, old))
        else:
            self._undo.append(lambda: mapping.pop(key, None))
        mapping[key] = value

    def append(self, items: list[Any], item: Any) -> None:
        items.append(item)
        self._undo.append(items.pop)

    def on_undo(self, action: Callable[[], None]) -> None:
        self._undo.append(action)

    def rollback(self) -> None:
        for action in reversed(self._undo):
            action()
        self._undo.clear()


class _Workflow:
    __slots__ = ("created_at", "grants", "name", "paused", "updated_at", "version")

    def __init__(self, name: str, now: dt.datetime) -> None:
        self.name = name
        self.version = 0
        self.paused = False
        self.grants: tuple[str, ...] = ()
        self.created_at = now
        self.updated_at = now

    def record(self) -> WorkflowRecord:
        return WorkflowRecord(
            name=self.name,
            version=self.version,
            paused=self.paused,
            grants=sorted(self.grants),
            created_at=self.created_at,
            updated_at=self.updated_at,
        )


class MemoryStore:
    """A `Store` kept in process memory; lost when the process ends.

    `clock` supplies the time (aware UTC); `fault_hook`, when set, is called
    with a point name between the writes of every commit point.
    """

    def __init__(self, *, clock: Clock = utc_now, fault_hook: FaultHook | None = None) -> None:
        self.clock = clock
        self.fault_hook = fault_hook
        self._lock = threading.RLock()
        self._workflows: dict[str, _Workflow] = {}
        self._versions: dict[tuple[str, int], WorkflowVersion] = {}
        self._handlers: dict[tuple[str, str], HandlerRecord] = {}
        self._events: dict[str, Event] = {}
        self._event_keys: dict[tuple[str, str, str], str] = {}
        self._event_seq: dict[str, int] = {}
        self._seq_event: dict[int, str] = {}
        self._pending: dict[_TopicKey, list[int]] = {}
        self._reservations: dict[str, set[str]] = {}
        self._next_seq = 1
        self._runs: dict[str, RunRecord] = {}
        self._active: dict[str, str] = {}
        self._ledger: dict[str, LedgerEntry] = {}
        self._ledger_by_run: dict[str, str] = {}
        self._audit: list[AuditEntry] = []
        self._leases: dict[str, Lease] = {}
        self._closed = False

    # Plumbing

    @contextmanager
    def _tx(self) -> Iterator[_Journal]:
        with self._lock:
            if self._closed:
                raise RuntimeError("the store is closed")
            journal = _Journal()
            try:
                yield journal
            except BaseException:
                journal.rollback()
                raise

    def _fault(self, point: str) -> None:
        if self.fault_hook is not None:
            self.fault_hook(point)

    def _now(self) -> dt.datetime:
        return self.clock()

    def close(self) -> None:
        with self._lock:
            self._closed = True

    def _workflow(self, name: str) -> _Workflow:
        found = self._workflows.get(name)
        if found is None:
            raise NotFound(f"no workflow named {name!r} is deployed")
        return found

    def _set_workflow(self, j: _Journal, wf: _Workflow, **changes: Any) -> None:
        old = {k: getattr(wf, k) for k in changes}

        def undo() -> None:
            for key, value in old.items():
                setattr(wf, key, value)

        j.on_undo(undo)
        for key, value in changes.items():
            setattr(wf, key, value)

    def _run(self, run_id: str) -> RunRecord:
        found = self._runs.get(run_id)
        if found is None:
            raise NotFound(f"no run with id {run_id!r}")
        return found

    def _entry(self, ledger_id: str) -> LedgerEntry:
        found = self._ledger.get(ledger_id)
        if found is None:
            raise NotFound(f"no ledger entry with id {ledger_id!r}")
        return found

    def _handler(self, workflow: str, handler: str) -> HandlerRecord:
        found = self._handlers.get((workflow, handler))
        if found is None:
            raise NotFound(f"workflow {workflow!r} has no handler {handler!r}")
        return found

    def _save_run(self, j: _Journal, run: RunRecord) -> None:
        previous = self._runs.get(run.id)
        was_active = previous is not None and previous.status is RunStatus.ACTIVE
        if run.status is RunStatus.ACTIVE and not was_active:
            holder = self._active.get(run.workflow)
            if holder is not None and holder != run.id:
                raise rules.active_run_exists(run.workflow, holder)
            j.set(self._active, run.workflow, run.id)
        elif was_active and run.status is not RunStatus.ACTIVE:
            j.on_undo(lambda: self._active.__setitem__(run.workflow, run.id))
            del self._active[run.workflow]
        j.set(self._runs, run.id, run)

    def _save_event(self, j: _Journal, event: Event) -> None:
        previous = self._events.get(event.id)
        seq = self._event_seq[event.id]
        key = (event.workflow, event.topic)
        was_pending = previous is not None and previous.status is EventStatus.PENDING
        if was_pending and event.status is not EventStatus.PENDING:
            self._pending_remove(j, key, seq)
        elif not was_pending and event.status is EventStatus.PENDING:
            self._pending_add(j, key, seq)
        if previous is not None and previous.status is EventStatus.RESERVED:
            self._unhold(j, str(previous.reserved_by), event.id)
        if event.status is EventStatus.RESERVED:
            self._hold(j, str(event.reserved_by), event.id)
        j.set(self._events, event.id, event)

    def _hold(self, j: _Journal, run_id: str, event_id: str) -> None:
        held = self._reservations.setdefault(run_id, set())
        held.add(event_id)
        j.on_undo(lambda: held.discard(event_id))

    def _unhold(self, j: _Journal, run_id: str, event_id: str) -> None:
        held = self._reservations[run_id]
        held.discard(event_id)
        j.on_undo(lambda: held.add(event_id))

    def _pending_add(self, j: _Journal, key: _TopicKey, seq: int) -> None:
        seqs = self._pending.setdefault(key, [])
        bisect.insort(seqs, seq)
        j.on_undo(lambda: seqs.remove(seq))

    def _pending_remove(self, j: _Journal, key: _TopicKey, seq: int) -> None:
        seqs = self._pending[key]
        del seqs[bisect.bisect_left(seqs, seq)]
        j.on_undo(lambda: bisect.insort(seqs, seq))

    def _insert_event(self, j: _Journal, event: Event) -> None:
        seq = self._next_seq
        self._next_seq += 1
        j.on_undo(lambda: setattr(self, "_next_seq", seq))
        j.set(self._event_seq, event.id, seq)
        j.set(self._seq_event, seq, event.id)
        j.set(self._event_keys, (event.workflow, event.topic, event.message_id), event.id)
        j.set(self._events, event.id, event)
        if event.status is EventStatus.PENDING:
            self._pending_add(j, (event.workflow, event.topic), seq)
        if event.status is EventStatus.RESERVED:
            self._hold(j, str(event.reserved_by), event.id)

    def _audit_entry(
        self,
        j: _Journal,
        *,
        actor: str,
        action: str,
        target: str,
        workflow: str | None,
        detail: JsonValue,
    ) -> AuditEntry:
        entry = AuditEntry(
            seq=len(self._audit) + 1,
            at=self._now(),
            actor=actor,
            action=action,
            workflow=workflow,
            target=target,
            detail=detail,
        )
        j.append(self._audit, entry)
        return entry

    # Workflows

    def deploy(
        self,
        name: str,
        source: str,
        manifest: JsonValue,
        *,
        handlers: Sequence[HandlerSpec] = (),
    ) -> int:
        with self._tx() as j:
            now = self._now()
            wf = self._workflows.get(name)
            if wf is None:
                wf = _Workflow(name, now)
                j.set(self._workflows, name, wf)
            version = wf.version + 1
            j.set(
                self._versions,
                (name, version),
                WorkflowVersion(
                    workflow=name,
                    version=version,
                    source=source,
                    manifest=manifest,
                    handlers=list(handlers),
                    created_at=now,
                ),
            )
            self._fault("deploy.version")
            for spec in handlers:
                old = self._handlers.get((name, spec.name))
                next_run_at = now if spec.kind is HandlerKind.PRODUCER else None
                record = HandlerRecord(
                    workflow=name,
                    name=spec.name,
                    kind=spec.kind,
                    version=version,
                    subscribe=list(spec.subscribe),
                    has_state=old.has_state if old else False,
                    state=old.state if old else None,
                    wake_at=old.wake_at if old else None,
                    next_run_at=next_run_at,
                    updated_at=now,
                )
                j.set(self._handlers, (name, spec.name), record)
            self._fault("deploy.handlers")
            self._set_workflow(j, wf, version=version, updated_at=now)
            return version

    def get_workflow(self, name: str) -> WorkflowRecord:
        with self._lock:
            return self._workflow(name).record()

    def get_workflow_version(self, name: str, version: int | None = None) -> WorkflowVersion:
        with self._lock:
            wf = self._workflow(name)
            wanted = wf.version if version is None else version
            found = self._versions.get((name, wanted))
            if found is None:
                raise NotFound(f"workflow {name!r} has no version {wanted}")
            return found

    def list_workflows(self) -> list[WorkflowRecord]:
        with self._lock:
            return [self._workflows[n].record() for n in sorted(self._workflows)]

    def _person_change(
        self, name: str, action: str, actor: str, detail: JsonValue, **changes: Any
    ) -> WorkflowRecord:
        with self._tx() as j:
            wf = self._workflow(name)
            self._set_workflow(j, wf, updated_at=self._now(), **changes)
            self._fault(f"{action}.workflow")
            self._audit_entry(
                j, actor=actor, action=action, target=name, workflow=name, detail=detail
            )
            return wf.record()

    def pause_workflow(self, name: str, *, actor: str, reason: str | None = None) -> WorkflowRecord:
        return self._person_change(name, "pause", actor, {"reason": reason}, paused=True)

    def resume_workflow(self, name: str, *, actor: str) -> WorkflowRecord:
        return self._person_change(name, "resume", actor, None, paused=False)

    def grant_permission(self, name: str, permission: str, *, actor: str) -> WorkflowRecord:
        with self._lock:
            grants = set(self._workflow(name).grants) | {permission}
            return self._person_change(
                name, "grant", actor, {"permission": permission}, grants=tuple(sorted(grants))
            )

    def revoke_permission(self, name: str, permission: str, *, actor: str) -> WorkflowRecord:
        with self._lock:
            grants = set(self._workflow(name).grants)
            if permission not in grants:
                raise NotFound(f"workflow {name!r} was never granted {permission!r}")
            grants.discard(permission)
            return self._person_change(
                name, "revoke", actor, {"permission": permission}, grants=tuple(sorted(grants))
            )

    # Handlers

    def get_handler(self, workflow: str, handler: str) -> HandlerRecord:
        with self._lock:
            return self._handler(workflow, handler)

    def list_handlers(self, workflow: str) -> list[HandlerRecord]:
        with self._lock:
            self._workflow(workflow)
            return sorted(
                (h for (w, _), h in self._handlers.items() if w == workflow),
                key=lambda h: h.name,
            )

    def _update_handler(self, workflow: str, handler: str, **changes: Any) -> HandlerRecord:
        with self._tx() as j:
            record = self._handler(workflow, handler).model_copy(
                update={**changes, "updated_at": self._now()}
            )
            j.set(self._handlers, (workflow, handler), record)
            return record

    def set_next_run_at(
        self, workflow: str, handler: str, next_run_at: dt.datetime | None
    ) -> HandlerRecord:
        return self._update_handler(workflow, handler, next_run_at=next_run_at)

    def set_wake_at(
        self, workflow: str, handler: str, wake_at: dt.datetime | None
    ) -> HandlerRecord:
        return self._update_handler(workflow, handler, wake_at=wake_at)

    # Events

    def _publish(
        self, j: _Journal, workflow: str, publication: Publication, created_by: str | None
    ) -> PublishResult:
        key = (workflow, publication.topic, publication.message_id)
        existing_id = self._event_keys.get(key)
        existing = self._events[existing_id] if existing_id else None
        outcome = rules.publish_outcome(existing)
        now = self._now()
        if existing is None:
            event = Event(
                id=rules.new_id("evt"),
                workflow=workflow,
                topic=publication.topic,
                message_id=publication.message_id,
                title=publication.title,
                payload=publication.payload,
                created_by=created_by,
                created_at=now,
                updated_at=now,
            )
            self._insert_event(j, event)
        elif outcome is PublishOutcome.REPLACED:
            event = existing.model_copy(
                update={
                    "title": publication.title,
                    "payload": publication.payload,
                    "updated_at": now,
                }
            )
            self._save_event(j, event)
        else:
            event = existing
        return PublishResult(outcome=outcome, event=event)

    def publish(
        self, workflow: str, publication: Publication, *, created_by: str | None = None
    ) -> PublishResult:
        with self._tx() as j:
            self._workflow(workflow)
            return self._publish(j, workflow, publication, created_by)

    def get_event(self, event_id: str) -> Event:
        with self._lock:
            found = self._events.get(event_id)
            if found is None:
                raise NotFound(f"no event with id {event_id!r}")
            return found

    def pending_events(self, workflow: str, topic: str, *, limit: int) -> list[Event]:
        with self._lock:
            seqs = self._pending.get((workflow, topic), [])[:limit]
            return [self._events[self._seq_event[s]] for s in seqs]

    def peek_cost(self, workflow: str, topic: str, *, limit: int) -> int:
        """Index entries `pending_events` reads: at most `limit`."""
        with self._lock:
            return len(self._pending.get((workflow, topic), [])[:limit])

    def events_by_ids(self, workflow: str, topic: str, message_ids: Sequence[str]) -> list[Event]:
        with self._lock:
            found = []
            for mid in dict.fromkeys(message_ids):
                event_id = self._event_keys.get((workflow, topic, mid))
                if event_id is not None:
                    found.append(self._events[event_id])
            return found

    def list_events(
        self,
        workflow: str,
        *,
        topic: str | None = None,
        status: EventStatus | None = None,
        limit: int | None = None,
    ) -> list[Event]:
        with self._lock:
            found = [
                e
                for e in self._events.values()
                if e.workflow == workflow
                and (topic is None or e.topic == topic)
                and (status is None or e.status is status)
            ]
            found.sort(key=lambda e: self._event_seq[e.id])
            return found[:limit] if limit is not None else found

    def bulk_load_events(self, workflow: str, events: Sequence[Event]) -> None:
        with self._tx() as j:
            self._workflow(workflow)
            for event in events:
                self._insert_event(j, event)

    def skip_event(self, event_id: str, *, actor: str, reason: str | None = None) -> Event:
        with self._tx() as j:
            event = self.get_event(event_id)
            if event.status is not EventStatus.PENDING:
                raise EventNotPending(
                    f"event {event_id} ({event.topic}/{event.message_id}) is "
                    f"{event.status.value}; only a pending event can be skipped"
                )
            skipped = event.model_copy(
                update={"status": EventStatus.SKIPPED, "updated_at": self._now()}
            )
            self._save_event(j, skipped)
            self._fault("skip_event.event")
            self._audit_entry(
                j,
                actor=actor,
                action="skip_event",
                target=event_id,
                workflow=event.workflow,
                detail={"reason": reason},
            )
            return skipped

    # Runs

    def _reserved_by(self, run_id: str) -> list[Event]:
        held = self._reservations.get(run_id, ())
        return sorted((self._events[i] for i in held), key=lambda e: self._event_seq[e.id])

    def _move_reservations(self, j: _Journal, old: str, new: str | None) -> None:
        """Hand `old`'s reservations to run `new`, or release them (pending, attempt + 1)."""
        now = self._now()
        for event in self._reserved_by(old):
            if new is None:
                moved = event.model_copy(
                    update={
                        "status": EventStatus.PENDING,
                        "reserved_by": None,
                        "attempt": event.attempt + 1,
                        "updated_at": now,
                    }
                )
            else:
                moved = event.model_copy(update={"reserved_by": new, "updated_at": now})
            self._save_event(j, moved)

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
        with self._tx() as j:
            wf = self._workflow(workflow)
            record = self._handlers.get((workflow, handler))
            declared = record.kind if record and record.version == wf.version else None
            rules.check_begin(
                workflow=workflow,
                paused=wf.paused,
                active_run=self._active.get(workflow),
                handler_kind=declared,
                handler=handler,
                kind=kind,
            )
            old = self._run(retry_of) if retry_of is not None else None
            ledger = self._ledger_of(old.id) if old else None
            plan = rules.plan_retry(
                old, handler=handler, workflow=workflow, phase=phase, ledger=ledger
            )
            now = self._now()
            run = RunRecord(
                id=rules.new_id("run"),
                workflow=workflow,
                workflow_version=version or wf.version,
                handler=handler,
                kind=kind,
                phase=phase,
                retry_of=retry_of,
                prepare_result=plan.prepare_result if plan else None,
                mutation_result=plan.mutation_result if plan else None,
                input_state=input_state,
                created_at=now,
                updated_at=now,
            )
            self._save_run(j, run)
            if old is not None and plan is not None:
                self._fault("begin_run.run")
                take_over = plan.reservations is rules.ReservationMove.TAKE_OVER
                self._move_reservations(j, old.id, run.id if take_over else None)
            return run

    def _ledger_of(self, run_id: str) -> LedgerEntry | None:
        ledger_id = self._ledger_by_run.get(run_id)
        return self._ledger[ledger_id] if ledger_id else None

    def get_run(self, run_id: str) -> RunRecord:
        with self._lock:
            return self._run(run_id)

    def list_runs(
        self,
        *,
        workflow: str | None = None,
        status: RunStatus | None = None,
        limit: int | None = None,
    ) -> list[RunRecord]:
        with self._lock:
            found = [
                r
                for r in self._runs.values()
                if (workflow is None or r.workflow == workflow)
                and (status is None or r.status is status)
            ]
            return found[:limit] if limit is not None else found

    def active_runs(self) -> list[RunRecord]:
        with self._lock:
            return [r for r in self._runs.values() if r.status is RunStatus.ACTIVE]

    def save_prepare_result(self, run_id: str, result: PrepareResult) -> RunRecord:
        with self._tx() as j:
            run = self._run(run_id)
            rules.check_save_prepare(run)
            requested = result.reserved_ids
            found = [
                self._events[eid]
                for topic, ids in requested.items()
                for mid in ids
                if (eid := self._event_keys.get((run.workflow, topic, mid))) is not None
            ]
            events = rules.check_reservable(run, requested, found)
            now = self._now()
            for event in events:
                self._save_event(
                    j,
                    event.model_copy(
                        update={
                            "status": EventStatus.RESERVED,
                            "reserved_by": run.id,
                            "updated_at": now,
                        }
                    ),
                )
                self._fault("save_prepare_result.event")
            updated = run.model_copy(
                update={"prepare_result": result, "phase": RunPhase.PREPARED, "updated_at": now}
            )
            self._save_run(j, updated)
            self._fault("save_prepare_result.run")
            handler = self._handler(run.workflow, run.handler).model_copy(
                update={"wake_at": result.wake_at, "updated_at": now}
            )
            j.set(self._handlers, (run.workflow, run.handler), handler)
            return updated

    def advance_phase(self, run_id: str, phase: RunPhase) -> RunRecord:
        with self._tx() as j:
            run = self._run(run_id)
            rules.check_advance(run, phase)
            updated = run.model_copy(update={"phase": phase, "updated_at": self._now()})
            self._save_run(j, updated)
            return updated

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
    ) -> RunRecord:
        with self._tx() as j:
            run = self._run(run_id)
            rules.check_status_change(run, status)
            if release_reservations:
                rules.check_release(run, self._ledger_of(run.id))
            updated = run.model_copy(
                update={
                    "status": status,
                    "error": error,
                    "failure": failure,
                    "resume_at": resume_at,
                    "logs": [*run.logs, *logs],
                    "updated_at": self._now(),
                }
            )
            self._save_run(j, updated)
            if release_reservations:
                self._fault("set_run_status.run")
                self._move_reservations(j, run.id, None)
            return updated

    def _save_state(self, j: _Journal, run: RunRecord, state: JsonValue | Unchanged) -> None:
        if state is UNCHANGED:
            return
        handler = self._handler(run.workflow, run.handler).model_copy(
            update={"state": state, "has_state": True, "updated_at": self._now()}
        )
        j.set(self._handlers, (run.workflow, run.handler), handler)

    def _committed(
        self, run: RunRecord, state: JsonValue | Unchanged, logs: Sequence[str], **extra: Any
    ) -> RunRecord:
        return run.model_copy(
            update={
                "phase": RunPhase.COMMITTED,
                "status": RunStatus.COMMITTED,
                "output_state": None if state is UNCHANGED else state,
                "logs": [*run.logs, *logs],
                "updated_at": self._now(),
                **extra,
            }
        )

    def commit_consumer_run(
        self,
        run_id: str,
        *,
        state: JsonValue | Unchanged = UNCHANGED,
        publishes: Sequence[Publication] = (),
        mutation_result: MutationResultValue | None = None,
        logs: Sequence[str] = (),
    ) -> RunCommit:
        with self._tx() as j:
            run = self._run(run_id)
            effective = rules.check_commit_consumer(run, self._ledger_of(run.id), mutation_result)
            final = (
                EventStatus.SKIPPED
                if isinstance(effective, MutationSkipped)
                else EventStatus.CONSUMED
            )
            now = self._now()
            for event in self._reserved_by(run.id):
                self._save_event(j, event.model_copy(update={"status": final, "updated_at": now}))
                self._fault("commit_consumer_run.event")
            self._save_state(j, run, state)
            self._fault("commit_consumer_run.state")
            published = []
            for publication in publishes:
                published.append(self._publish(j, run.workflow, publication, run.id))
                self._fault("commit_consumer_run.publish")
            committed = self._committed(run, state, logs, mutation_result=effective)
            self._save_run(j, committed)
            return RunCommit(run=committed, published=published)

    def commit_producer_run(
        self,
        run_id: str,
        *,
        state: JsonValue | Unchanged = UNCHANGED,
        publishes: Sequence[Publication] = (),
        next_run_at: dt.datetime | None,
        logs: Sequence[str] = (),
    ) -> RunCommit:
        with self._tx() as j:
            run = self._run(run_id)
            rules.check_producer_commit(run)
            self._save_state(j, run, state)
            self._fault("commit_producer_run.state")
            published = []
            for publication in publishes:
                published.append(self._publish(j, run.workflow, publication, run.id))
                self._fault("commit_producer_run.publish")
            handler = self._handler(run.workflow, run.handler).model_copy(
                update={"next_run_at": next_run_at, "updated_at": self._now()}
            )
            j.set(self._handlers, (run.workflow, run.handler), handler)
            committed = self._committed(run, state, logs)
            self._save_run(j, committed)
            return RunCommit(run=committed, published=published)

    # The mutation ledger

    def record_mutation_intent(
        self,
        run_id: str,
        *,
        connector: str,
        operation: str,
        params: JsonValue,
        idempotency_key: str,
        ui_title: str | None = None,
    ) -> LedgerEntry:
        with self._tx() as j:
            run = self._run(run_id)
            rules.check_intent(run, self._ledger_of(run.id))
            now = self._now()
            entry = LedgerEntry(
                id=rules.new_id("mut"),
                run_id=run.id,
                workflow=run.workflow,
                handler=run.handler,
                connector=connector,
                operation=operation,
                params=params,
                idempotency_key=idempotency_key,
                ui_title=ui_title,
                created_at=now,
                updated_at=now,
            )
            j.set(self._ledger, entry.id, entry)
            j.set(self._ledger_by_run, run.id, entry.id)
            return entry

    def _change_entry(
        self,
        ledger_id: str,
        allowed: Sequence[LedgerStatus],
        target: LedgerStatus,
        run_update: Callable[[RunRecord, LedgerEntry], dict[str, Any] | None] | None = None,
        **changes: Any,
    ) -> LedgerEntry:
        with self._tx() as j:
            entry = self._entry(ledger_id)
            rules.check_ledger_change(entry, allowed, target.value)
            run = self._run(entry.run_id)
            rules.check_ledger_run(run, entry)
            now = self._now()
            if target is LedgerStatus.NEEDS_RECONCILE:
                changes["reconcile_attempts"] = rules.reconcile_attempts_after(entry)
            updated = entry.model_copy(update={"status": target, "updated_at": now, **changes})
            j.set(self._ledger, entry.id, updated)
            run_changes = run_update(run, updated) if run_update else None
            if run_changes:
                self._fault("ledger.entry")
                self._save_run(j, run.model_copy(update={**run_changes, "updated_at": now}))
            return updated

    def record_mutation_applied(self, ledger_id: str, result: JsonValue) -> LedgerEntry:
        return self._change_entry(
            ledger_id,
            (LedgerStatus.IN_FLIGHT, LedgerStatus.NEEDS_RECONCILE),
            LedgerStatus.APPLIED,
            lambda run, entry: rules.applied_run_changes(run, entry.result),
            result=result,
            next_reconcile_at=None,
        )

    def record_mutation_failed(self, ledger_id: str, *, error: str) -> LedgerEntry:
        return self._change_entry(
            ledger_id,
            (LedgerStatus.IN_FLIGHT, LedgerStatus.NEEDS_RECONCILE),
            LedgerStatus.FAILED,
            error=error,
            next_reconcile_at=None,
        )

    def record_needs_reconcile(
        self, ledger_id: str, *, next_reconcile_at: dt.datetime, error: str | None = None
    ) -> LedgerEntry:
        return self._change_entry(
            ledger_id,
            (LedgerStatus.IN_FLIGHT, LedgerStatus.NEEDS_RECONCILE),
            LedgerStatus.NEEDS_RECONCILE,
            error=error,
            next_reconcile_at=next_reconcile_at,
        )

    def record_mutation_indeterminate(
        self, ledger_id: str, *, error: str | None = None
    ) -> LedgerEntry:
        return self._change_entry(
            ledger_id,
            (LedgerStatus.IN_FLIGHT, LedgerStatus.NEEDS_RECONCILE),
            LedgerStatus.INDETERMINATE,
            error=error,
            next_reconcile_at=None,
        )

    def resolve_mutation(
        self,
        ledger_id: str,
        resolution: Resolution,
        *,
        actor: str,
        detail: str | None = None,
        result: JsonValue = None,
    ) -> LedgerEntry:
        with self._tx() as j:
            entry = self._entry(ledger_id)
            rules.check_resolution(entry, resolution)
            run = self._run(entry.run_id)
            rules.check_ledger_run(run, entry)
            now = self._now()
            target, run_changes = rules.resolution_effect(run, resolution, result)
            updated = entry.model_copy(
                update={
                    "status": target,
                    "resolved_by": actor,
                    "resolved_at": now,
                    "next_reconcile_at": None,
                    "result": result if resolution is Resolution.HAPPENED else entry.result,
                    "updated_at": now,
                }
            )
            j.set(self._ledger, entry.id, updated)
            if run_changes:
                self._save_run(j, run.model_copy(update={**run_changes, "updated_at": now}))
            self._fault("resolve_mutation.entry")
            self._audit_entry(
                j,
                actor=actor,
                action=f"resolve_mutation:{resolution.value}",
                target=entry.id,
                workflow=entry.workflow,
                detail={"run": run.id, "detail": detail},
            )
            return updated

    def get_ledger_entry(self, ledger_id: str) -> LedgerEntry:
        with self._lock:
            return self._entry(ledger_id)

    def ledger_entry_for_run(self, run_id: str) -> LedgerEntry | None:
        with self._lock:
            return self._ledger_of(run_id)

    def list_ledger(
        self,
        *,
        workflow: str | None = None,
        status: LedgerStatus | None = None,
        limit: int | None = None,
    ) -> list[LedgerEntry]:
        with self._lock:
            found = [
                e
                for e in self._ledger.values()
                if (workflow is None or e.workflow == workflow)
                and (status is None or e.status is status)
            ]
            return found[:limit] if limit is not None else found

    def due_reconciliations(self, now: dt.datetime | None = None) -> list[LedgerEntry]:
        with self._lock:
            at = now or self._now()
            due = [
                e
                for e in self._ledger.values()
                if e.status is LedgerStatus.NEEDS_RECONCILE
                and (e.next_reconcile_at is None or e.next_reconcile_at <= at)
            ]
            return sorted(due, key=lambda e: (e.next_reconcile_at or at, e.created_at))

    # Scheduling queries

    def _current_handlers(self, kind: HandlerKind) -> Iterator[HandlerRecord]:
        for (workflow, _), handler in sorted(self._handlers.items()):
            wf = self._workflows[workflow]
            if handler.kind is kind and handler.version == wf.version and not wf.paused:
                yield handler

    def due_producers(self, now: dt.datetime | None = None) -> list[HandlerRecord]:
        with self._lock:
            at = now or self._now()
            due = [
                h
                for h in self._current_handlers(HandlerKind.PRODUCER)
                if h.next_run_at is not None and h.next_run_at <= at
            ]
            return sorted(due, key=lambda h: (h.next_run_at or at, h.workflow, h.name))

    def consumers_to_wake(self, now: dt.datetime | None = None) -> list[ConsumerWake]:
        with self._lock:
            at = now or self._now()
            wakes = []
            for h in self._current_handlers(HandlerKind.CONSUMER):
                if any(self._pending.get((h.workflow, t)) for t in h.subscribe):
                    reason = WakeReason.PENDING_EVENTS
                elif h.wake_at is not None and h.wake_at <= at:
                    reason = WakeReason.WAKE_AT
                else:
                    continue
                wakes.append(
                    ConsumerWake(
                        workflow=h.workflow, handler=h.name, reason=reason, wake_at=h.wake_at
                    )
                )
            return wakes

    # Audit

    def record_audit(
        self,
        *,
        actor: str,
        action: str,
        target: str,
        workflow: str | None = None,
        detail: JsonValue = None,
    ) -> AuditEntry:
        with self._tx() as j:
            return self._audit_entry(
                j, actor=actor, action=action, target=target, workflow=workflow, detail=detail
            )

    def audit_log(
        self,
        *,
        workflow: str | None = None,
        after_seq: int = 0,
        limit: int | None = None,
    ) -> list[AuditEntry]:
        with self._lock:
            found = [
                a for a in self._audit[after_seq:] if workflow is None or a.workflow == workflow
            ]
            return found[:limit] if limit is not None else found

    # Leases

    def acquire_lease(self, workflow: str, owner: str, *, ttl: dt.timedelta) -> Lease | None:
        with self._tx() as j:
            now = self._now()
            current = self._leases.get(workflow)
            if current is not None and current.owner != owner and not current.expired(now):
                return None
            if current is not None and current.owner == owner and not current.expired(now):
                lease = current.model_copy(update={"expires_at": now + ttl})
            else:
                lease = Lease(
                    workflow=workflow,
                    owner=owner,
                    token=(current.token + 1) if current else 1,
                    acquired_at=now,
                    expires_at=now + ttl,
                )
            j.set(self._leases, workflow, lease)
            return lease

    def heartbeat_lease(self, lease: Lease, *, ttl: dt.timedelta) -> Lease:
        with self._tx() as j:
            now = self._now()
            current = rules.check_lease(
                self._leases.get(lease.workflow), lease, now, "heartbeat", live=True
            )
            renewed = current.model_copy(update={"expires_at": now + ttl})
            j.set(self._leases, lease.workflow, renewed)
            return renewed

    def release_lease(self, lease: Lease) -> None:
        with self._tx() as j:
            now = self._now()
            current = rules.check_lease(
                self._leases.get(lease.workflow), lease, now, "release", live=False
            )
            j.set(self._leases, lease.workflow, current.model_copy(update={"expires_at": now}))

    def get_lease(self, workflow: str) -> Lease | None:
        with self._lock:
            return self._leases.get(workflow)
