"""The SQL store on SQLAlchemy 2 Core, for SQLite and PostgreSQL.

Each method is one transaction. Commit points read the rows they check with
``SELECT … FOR UPDATE`` (PostgreSQL; SQLite takes the database write lock at
``BEGIN IMMEDIATE``), then write with conditional updates whose row counts are
checked, so two workers racing for the same rows cannot both win.
"""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any

from pydantic import JsonValue, TypeAdapter
from sqlalchemy import (
    Connection,
    Row,
    Select,
    and_,
    delete,
    exists,
    func,
    insert,
    literal_column,
    or_,
    select,
    text,
    update,
)
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.exc import IntegrityError, OperationalError

from keep_sdk.errors import (
    ActiveRunExists,
    EventNotPending,
    LeaseLost,
    MutationConflict,
    NotFound,
    StoreConflict,
    StoreError,
)
from keep_sdk.model import (
    Event,
    EventStatus,
    FailureKind,
    HandlerKind,
    LedgerEntry,
    LedgerStatus,
    MutationResult,
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
from keep_sdk.stores.sql import _schema as t
from keep_sdk.stores.sql import _statements as q
from keep_sdk.stores.sql._engine import WRITE, create_store_engine

__all__ = ["SqlStore"]

_MUTATION_RESULT: TypeAdapter[MutationResultValue] = TypeAdapter(MutationResult)
_HANDLER_SPECS: TypeAdapter[list[HandlerSpec]] = TypeAdapter(list[HandlerSpec])
_SETTLING = (LedgerStatus.IN_FLIGHT, LedgerStatus.NEEDS_RECONCILE)


def _dump(model: Any) -> JsonValue:
    if model is None:
        return None
    dumped: JsonValue = model.model_dump(mode="json", by_alias=True)
    return dumped


def _event(row: Row[Any]) -> Event:
    return Event(
        id=row.id,
        workflow=row.workflow,
        topic=row.topic,
        message_id=row.message_id,
        title=row.title,
        payload=row.payload,
        status=EventStatus(row.status),
        reserved_by=row.reserved_by,
        created_by=row.created_by,
        attempt=row.attempt,
        created_at=row.created_at,
        updated_at=row.updated_at,
    )


def _run(row: Row[Any]) -> RunRecord:
    return RunRecord(
        id=row.id,
        workflow=row.workflow,
        workflow_version=row.workflow_version,
        handler=row.handler,
        kind=HandlerKind(row.kind),
        phase=RunPhase(row.phase),
        status=RunStatus(row.status),
        retry_of=row.retry_of,
        prepare_result=(
            PrepareResult.model_validate(row.prepare_result)
            if row.prepare_result is not None
            else None
        ),
        mutation_result=(
            _MUTATION_RESULT.validate_python(row.mutation_result)
            if row.mutation_result is not None
            else None
        ),
        input_state=row.input_state,
        output_state=row.output_state,
        error=row.error,
        failure=FailureKind(row.failure) if row.failure else None,
        logs=row.logs,
        created_at=row.created_at,
        updated_at=row.updated_at,
        resume_at=row.resume_at,
    )


def _run_values(run: RunRecord) -> dict[str, Any]:
    return {
        "phase": run.phase.value,
        "status": run.status.value,
        "prepare_result": _dump(run.prepare_result),
        "mutation_result": _dump(run.mutation_result),
        "output_state": run.output_state,
        "error": run.error,
        "failure": run.failure.value if run.failure else None,
        "logs": run.logs,
        "updated_at": run.updated_at,
        "resume_at": run.resume_at,
    }


def _entry(row: Row[Any]) -> LedgerEntry:
    return LedgerEntry(
        id=row.id,
        run_id=row.run_id,
        workflow=row.workflow,
        handler=row.handler,
        connector=row.connector,
        operation=row.operation,
        params=row.params,
        idempotency_key=row.idempotency_key,
        status=LedgerStatus(row.status),
        result=row.result,
        error=row.error,
        ui_title=row.ui_title,
        reconcile_attempts=row.reconcile_attempts,
        next_reconcile_at=row.next_reconcile_at,
        resolved_by=row.resolved_by,
        resolved_at=row.resolved_at,
        created_at=row.created_at,
        updated_at=row.updated_at,
    )


def _lease(row: Row[Any] | None) -> Lease | None:
    if row is None:
        return None
    return Lease(
        workflow=row.workflow,
        owner=row.owner,
        token=row.token,
        acquired_at=row.acquired_at,
        expires_at=row.expires_at,
    )


def _audit(row: Row[Any]) -> AuditEntry:
    return AuditEntry(
        seq=row.seq,
        at=row.at,
        actor=row.actor,
        action=row.action,
        workflow=row.workflow,
        target=row.target,
        detail=row.detail,
    )


def _translate(error: IntegrityError) -> StoreConflict:
    message = str(error.orig)
    if "uq_runs_one_active" in message or "keep_runs.workflow" in message:
        return ActiveRunExists(
            "another worker began or resumed a run in this workflow at the same moment; "
            "only one run may be active, so this one was not"
        )
    if "uq_ledger_run" in message or "keep_ledger.run_id" in message:
        return MutationConflict("the run already recorded its one mutation (another worker)")
    return StoreConflict(f"a concurrent change conflicted with this one: {message}")


class SqlStore:
    """A `Store` in a SQLite file or a PostgreSQL database, selected by URL.

    Opening creates the schema in an empty database, upgrades an older one and
    refuses a newer one (`SchemaVersionError`). `clock` supplies the time;
    `fault_hook`, when set, is called between the writes of every commit point.
    """

    def __init__(
        self, url: str, *, clock: Clock = utc_now, fault_hook: FaultHook | None = None
    ) -> None:
        self.url = url
        self.clock = clock
        self.fault_hook = fault_hook
        self.engine = create_store_engine(url)
        self.dialect = self.engine.dialect.name
        try:
            with self._tx() as conn:
                t.lock_for_schema(conn)
                t.ensure_schema(conn)
        except BaseException:
            self.engine.dispose()
            raise

    def __repr__(self) -> str:
        return f"SqlStore({self.engine.url.render_as_string(hide_password=True)!r})"

    # Plumbing

    @contextmanager
    def _tx(self, *, write: bool = True) -> Iterator[Connection]:
        try:
            with self.engine.connect() as conn:
                conn.execution_options(**{WRITE: write})
                with conn.begin():
                    yield conn
        except IntegrityError as exc:
            raise _translate(exc) from None
        except OperationalError as exc:
            raise StoreError(
                f"{self!r} could not complete the operation: {exc.orig}; check that the "
                "database is reachable and not locked by another program, then retry"
            ) from exc

    def _fault(self, point: str) -> None:
        if self.fault_hook is not None:
            self.fault_hook(point)

    def _now(self) -> dt.datetime:
        return self.clock()

    def _locked(self, conn: Connection, query: Select[Any]) -> Select[Any]:
        """`query` with ``FOR UPDATE`` inside a PostgreSQL write transaction (SQLite's
        ``BEGIN IMMEDIATE`` already holds the write lock)."""
        writing = conn.get_execution_options().get(WRITE, True)
        return query.with_for_update() if writing and self.dialect == "postgresql" else query

    def close(self) -> None:
        self.engine.dispose()

    def _insert(self, table: Any) -> Any:
        module = postgresql if self.dialect == "postgresql" else sqlite
        return module.insert(table)

    def _workflow_row(self, conn: Connection, name: str, *, lock: bool = False) -> Row[Any]:
        query = q.WORKFLOW_BY_NAME[1 if lock and self.dialect == "postgresql" else 0]
        row = conn.execute(query, {"key_name": name}).first()
        if row is None:
            raise NotFound(f"no workflow named {name!r} is deployed")
        return row

    def _workflow_record(self, conn: Connection, row: Row[Any]) -> WorkflowRecord:
        permissions = conn.execute(
            select(t.grants.c.permission)
            .where(t.grants.c.workflow == row.name)
            .order_by(t.grants.c.permission)
        ).scalars()
        return WorkflowRecord(
            name=row.name,
            version=row.version,
            paused=row.paused,
            grants=list(permissions),
            created_at=row.created_at,
            updated_at=row.updated_at,
        )

    def _pick(self, conn: Connection, lookup: q.Lookup) -> Select[Any]:
        plain, for_update = lookup
        writing = conn.get_execution_options().get(WRITE, True)
        return for_update if writing and self.dialect == "postgresql" else plain

    def _run_row(self, conn: Connection, run_id: str) -> RunRecord:
        row = conn.execute(self._pick(conn, q.RUN_BY_ID), {"key_id": run_id}).first()
        if row is None:
            raise NotFound(f"no run with id {run_id!r}")
        return _run(row)

    def _write_run(self, conn: Connection, before: RunRecord, after: RunRecord) -> None:
        done = conn.execute(
            q.WRITE_RUN,
            {
                "was_id": before.id,
                "was_status": before.status.value,
                "was_phase": before.phase.value,
                **_run_values(after),
            },
        )
        if done.rowcount != 1:
            raise StoreConflict(
                f"run {before.id} changed while this commit point ran; read it again and retry"
            )

    def _entry_row(self, conn: Connection, ledger_id: str) -> LedgerEntry:
        row = conn.execute(self._pick(conn, q.LEDGER_BY_ID), {"key_id": ledger_id}).first()
        if row is None:
            raise NotFound(f"no ledger entry with id {ledger_id!r}")
        return _entry(row)

    def _ledger_of(self, conn: Connection, run_id: str) -> LedgerEntry | None:
        row = conn.execute(self._pick(conn, q.LEDGER_BY_RUN), {"key_run": run_id}).first()
        return _entry(row) if row is not None else None

    def _handler_records(self, conn: Connection, *conditions: Any) -> list[HandlerRecord]:
        rows = conn.execute(
            select(t.handlers).where(*conditions).order_by(t.handlers.c.workflow, t.handlers.c.name)
        ).all()
        subs: dict[tuple[str, str], list[str]] = {}
        if rows:
            names = {r.workflow for r in rows}
            for sub in conn.execute(
                select(t.subscriptions)
                .where(t.subscriptions.c.workflow.in_(names))
                .order_by(t.subscriptions.c.topic)
            ):
                subs.setdefault((sub.workflow, sub.handler), []).append(sub.topic)
        return [
            HandlerRecord(
                workflow=r.workflow,
                name=r.name,
                kind=HandlerKind(r.kind),
                version=r.version,
                subscribe=subs.get((r.workflow, r.name), []),
                has_state=r.has_state,
                state=r.state,
                wake_at=r.wake_at,
                next_run_at=r.next_run_at,
                updated_at=r.updated_at,
            )
            for r in rows
        ]

    def _handler(self, conn: Connection, workflow: str, handler: str) -> HandlerRecord:
        found = self._handler_records(
            conn, t.handlers.c.workflow == workflow, t.handlers.c.name == handler
        )
        if not found:
            raise NotFound(f"workflow {workflow!r} has no handler {handler!r}")
        return found[0]

    def _audit_entry(
        self,
        conn: Connection,
        *,
        actor: str,
        action: str,
        target: str,
        workflow: str | None,
        detail: JsonValue,
    ) -> AuditEntry:
        values = {
            "at": self._now(),
            "actor": actor,
            "action": action,
            "workflow": workflow,
            "target": target,
            "detail": detail,
        }
        seq = conn.execute(insert(t.audit).values(**values).returning(t.audit.c.seq)).scalar_one()
        return AuditEntry(seq=seq, **values)

    # Workflows

    def deploy(
        self,
        name: str,
        source: str,
        manifest: JsonValue,
        *,
        handlers: Sequence[HandlerSpec] = (),
    ) -> int:
        with self._tx() as conn:
            now = self._now()
            row = conn.execute(
                self._locked(conn, select(t.workflows).where(t.workflows.c.name == name))
            ).first()
            if row is None:
                conn.execute(
                    insert(t.workflows).values(
                        name=name, version=0, paused=False, created_at=now, updated_at=now
                    )
                )
                version = 1
            else:
                version = row.version + 1
            conn.execute(
                insert(t.workflow_versions).values(
                    workflow=name,
                    version=version,
                    source=source,
                    manifest=manifest,
                    handlers=[_dump(h) for h in handlers],
                    created_at=now,
                )
            )
            self._fault("deploy.version")
            for spec in handlers:
                values = {
                    "kind": spec.kind.value,
                    "version": version,
                    "next_run_at": now if spec.kind is HandlerKind.PRODUCER else None,
                    "updated_at": now,
                }
                done = conn.execute(
                    update(t.handlers)
                    .where(t.handlers.c.workflow == name, t.handlers.c.name == spec.name)
                    .values(**values)
                )
                if done.rowcount == 0:
                    conn.execute(
                        insert(t.handlers).values(
                            workflow=name, name=spec.name, has_state=False, state=None, **values
                        )
                    )
                conn.execute(
                    delete(t.subscriptions).where(
                        t.subscriptions.c.workflow == name,
                        t.subscriptions.c.handler == spec.name,
                    )
                )
                if spec.subscribe:
                    conn.execute(
                        insert(t.subscriptions),
                        [
                            {"workflow": name, "handler": spec.name, "topic": topic}
                            for topic in dict.fromkeys(spec.subscribe)
                        ],
                    )
            self._fault("deploy.handlers")
            conn.execute(
                update(t.workflows)
                .where(t.workflows.c.name == name)
                .values(version=version, updated_at=now)
            )
            return version

    def get_workflow(self, name: str) -> WorkflowRecord:
        with self._tx(write=False) as conn:
            return self._workflow_record(conn, self._workflow_row(conn, name))

    def get_workflow_version(self, name: str, version: int | None = None) -> WorkflowVersion:
        with self._tx(write=False) as conn:
            wf = self._workflow_row(conn, name)
            wanted = wf.version if version is None else version
            row = conn.execute(
                select(t.workflow_versions).where(
                    t.workflow_versions.c.workflow == name,
                    t.workflow_versions.c.version == wanted,
                )
            ).first()
            if row is None:
                raise NotFound(f"workflow {name!r} has no version {wanted}")
            return WorkflowVersion(
                workflow=name,
                version=wanted,
                source=row.source,
                manifest=row.manifest,
                handlers=_HANDLER_SPECS.validate_python(row.handlers),
                created_at=row.created_at,
            )

    def list_workflows(self) -> list[WorkflowRecord]:
        with self._tx(write=False) as conn:
            rows = conn.execute(select(t.workflows).order_by(t.workflows.c.name)).all()
            return [self._workflow_record(conn, row) for row in rows]

    def _set_paused(
        self, name: str, paused: bool, action: str, actor: str, detail: JsonValue
    ) -> WorkflowRecord:
        with self._tx() as conn:
            self._workflow_row(conn, name)
            conn.execute(
                update(t.workflows)
                .where(t.workflows.c.name == name)
                .values(paused=paused, updated_at=self._now())
            )
            self._fault(f"{action}.workflow")
            self._audit_entry(
                conn, actor=actor, action=action, target=name, workflow=name, detail=detail
            )
            return self._workflow_record(conn, self._workflow_row(conn, name))

    def pause_workflow(self, name: str, *, actor: str, reason: str | None = None) -> WorkflowRecord:
        return self._set_paused(name, True, "pause", actor, {"reason": reason})

    def resume_workflow(self, name: str, *, actor: str) -> WorkflowRecord:
        return self._set_paused(name, False, "resume", actor, None)

    def grant_permission(self, name: str, permission: str, *, actor: str) -> WorkflowRecord:
        with self._tx() as conn:
            self._workflow_row(conn, name)
            now = self._now()
            conn.execute(
                self._insert(t.grants)
                .values(workflow=name, permission=permission, granted_at=now)
                .on_conflict_do_nothing()
            )
            conn.execute(
                update(t.workflows).where(t.workflows.c.name == name).values(updated_at=now)
            )
            self._fault("grant.workflow")
            self._audit_entry(
                conn,
                actor=actor,
                action="grant",
                target=name,
                workflow=name,
                detail={"permission": permission},
            )
            return self._workflow_record(conn, self._workflow_row(conn, name))

    def revoke_permission(self, name: str, permission: str, *, actor: str) -> WorkflowRecord:
        with self._tx() as conn:
            self._workflow_row(conn, name)
            done = conn.execute(
                delete(t.grants).where(
                    t.grants.c.workflow == name, t.grants.c.permission == permission
                )
            )
            if done.rowcount == 0:
                raise NotFound(f"workflow {name!r} was never granted {permission!r}")
            conn.execute(
                update(t.workflows).where(t.workflows.c.name == name).values(updated_at=self._now())
            )
            self._fault("revoke.workflow")
            self._audit_entry(
                conn,
                actor=actor,
                action="revoke",
                target=name,
                workflow=name,
                detail={"permission": permission},
            )
            return self._workflow_record(conn, self._workflow_row(conn, name))

    # Handlers

    def get_handler(self, workflow: str, handler: str) -> HandlerRecord:
        with self._tx(write=False) as conn:
            return self._handler(conn, workflow, handler)

    def list_handlers(self, workflow: str) -> list[HandlerRecord]:
        with self._tx(write=False) as conn:
            self._workflow_row(conn, workflow)
            return self._handler_records(conn, t.handlers.c.workflow == workflow)

    def _update_handler(self, workflow: str, handler: str, **values: Any) -> HandlerRecord:
        with self._tx() as conn:
            done = conn.execute(
                update(t.handlers)
                .where(t.handlers.c.workflow == workflow, t.handlers.c.name == handler)
                .values(updated_at=self._now(), **values)
            )
            if done.rowcount == 0:
                raise NotFound(f"workflow {workflow!r} has no handler {handler!r}")
            return self._handler(conn, workflow, handler)

    def set_next_run_at(
        self, workflow: str, handler: str, next_run_at: dt.datetime | None
    ) -> HandlerRecord:
        return self._update_handler(workflow, handler, next_run_at=next_run_at)

    def set_wake_at(
        self, workflow: str, handler: str, wake_at: dt.datetime | None
    ) -> HandlerRecord:
        return self._update_handler(workflow, handler, wake_at=wake_at)

    # Events

    def _event_at(
        self, conn: Connection, workflow: str, topic: str, message_id: str
    ) -> Row[Any] | None:
        return conn.execute(
            self._pick(conn, q.EVENT_BY_KEY),
            {"key_workflow": workflow, "key_topic": topic, "key_message": message_id},
        ).first()

    def _publish(
        self, conn: Connection, workflow: str, publication: Publication, created_by: str | None
    ) -> PublishResult:
        now = self._now()
        row = self._event_at(conn, workflow, publication.topic, publication.message_id)
        if row is None:
            inserted = conn.execute(
                q.insert_event(self.dialect),
                {
                    "id": rules.new_id("evt"),
                    "workflow": workflow,
                    "topic": publication.topic,
                    "message_id": publication.message_id,
                    "title": publication.title,
                    "payload": publication.payload,
                    "status": EventStatus.PENDING.value,
                    "created_by": created_by,
                    "attempt": 0,
                    "created_at": now,
                    "updated_at": now,
                },
            ).first()
            row = self._event_at(conn, workflow, publication.topic, publication.message_id)
            if row is None:
                raise StoreConflict(f"event {publication.message_id} vanished while published")
            if inserted is not None:
                return PublishResult(outcome=PublishOutcome.CREATED, event=_event(row))
        existing = _event(row)
        outcome = rules.publish_outcome(existing)
        if outcome is PublishOutcome.REPLACED:
            done = conn.execute(
                q.REPLACE_EVENT,
                {
                    "was_seq": row.seq,
                    "title": publication.title,
                    "payload": publication.payload,
                    "updated_at": now,
                },
            )
            if done.rowcount != 1:
                raise StoreConflict(
                    f"event {existing.id} was reserved while being replaced; publish again"
                )
            existing = existing.model_copy(
                update={
                    "title": publication.title,
                    "payload": publication.payload,
                    "updated_at": now,
                }
            )
        return PublishResult(outcome=outcome, event=existing)

    def publish(
        self, workflow: str, publication: Publication, *, created_by: str | None = None
    ) -> PublishResult:
        with self._tx() as conn:
            self._workflow_row(conn, workflow)
            return self._publish(conn, workflow, publication, created_by)

    def get_event(self, event_id: str) -> Event:
        with self._tx(write=False) as conn:
            return self._get_event(conn, event_id)

    def _get_event(self, conn: Connection, event_id: str) -> Event:
        row = conn.execute(
            self._locked(conn, select(t.events).where(t.events.c.id == event_id))
        ).first()
        if row is None:
            raise NotFound(f"no event with id {event_id!r}")
        return _event(row)

    def _pending_query(self, workflow: str, topic: str, limit: int) -> Select[Any]:
        return (
            select(t.events)
            .where(t.events.c.workflow == workflow, t.events.c.topic == topic, q.PENDING)
            .order_by(t.events.c.seq)
            .limit(limit)
        )

    def pending_events(self, workflow: str, topic: str, *, limit: int) -> list[Event]:
        with self._tx(write=False) as conn:
            rows = conn.execute(self._pending_query(workflow, topic, limit)).all()
            return [_event(r) for r in rows]

    def peek_cost(self, workflow: str, topic: str, *, limit: int) -> int:
        """Work done by `pending_events`: SQLite VM steps / 100, or PostgreSQL rows examined."""
        query = self._pending_query(workflow, topic, limit)
        with self._tx(write=False) as conn:
            if self.dialect == "postgresql":
                compiled = query.compile(conn, compile_kwargs={"literal_binds": True})
                plan: Any = conn.execute(
                    text(f"EXPLAIN (ANALYZE, FORMAT JSON) {compiled}")
                ).scalar_one()
                if isinstance(plan, str):
                    plan = json.loads(plan)
                return _rows_examined(plan[0]["Plan"])
            raw = conn.connection.dbapi_connection
            assert raw is not None
            steps = [0]

            def count() -> int:
                steps[0] += 1
                return 0

            raw.set_progress_handler(count, 100)
            try:
                conn.execute(query).all()
            finally:
                raw.set_progress_handler(None, 0)
            return steps[0]

    def explain_pending(self, workflow: str, topic: str, *, limit: int) -> str:
        """The database's query plan for `pending_events` (for diagnostics and tests)."""
        query = self._pending_query(workflow, topic, limit)
        with self._tx(write=False) as conn:
            compiled = str(query.compile(conn, compile_kwargs={"literal_binds": True}))
            if self.dialect == "postgresql":
                return "\n".join(conn.execute(text(f"EXPLAIN {compiled}")).scalars())
            rows = conn.exec_driver_sql(f"EXPLAIN QUERY PLAN {compiled}").all()
            return "\n".join(str(r[-1]) for r in rows)

    def events_by_ids(self, workflow: str, topic: str, message_ids: Sequence[str]) -> list[Event]:
        wanted = list(dict.fromkeys(message_ids))
        if not wanted:
            return []
        with self._tx(write=False) as conn:
            rows = conn.execute(
                select(t.events).where(
                    t.events.c.workflow == workflow,
                    t.events.c.topic == topic,
                    t.events.c.message_id.in_(wanted),
                )
            ).all()
            by_id = {r.message_id: _event(r) for r in rows}
            return [by_id[m] for m in wanted if m in by_id]

    def list_events(
        self,
        workflow: str,
        *,
        topic: str | None = None,
        status: EventStatus | None = None,
        limit: int | None = None,
    ) -> list[Event]:
        query = select(t.events).where(t.events.c.workflow == workflow)
        if topic is not None:
            query = query.where(t.events.c.topic == topic)
        if status is not None:
            query = query.where(t.events.c.status == status.value)
        with self._tx(write=False) as conn:
            rows = conn.execute(query.order_by(t.events.c.seq).limit(limit)).all()
            return [_event(r) for r in rows]

    def bulk_load_events(self, workflow: str, events: Sequence[Event]) -> None:
        rows = [
            {
                "id": e.id,
                "workflow": workflow,
                "topic": e.topic,
                "message_id": e.message_id,
                "title": e.title,
                "payload": e.payload,
                "status": e.status.value,
                "reserved_by": e.reserved_by,
                "created_by": e.created_by,
                "attempt": e.attempt,
                "created_at": e.created_at,
                "updated_at": e.updated_at,
            }
            for e in events
        ]
        with self._tx() as conn:
            self._workflow_row(conn, workflow)
            for start in range(0, len(rows), 10_000):
                conn.execute(insert(t.events), rows[start : start + 10_000])

    def skip_event(self, event_id: str, *, actor: str, reason: str | None = None) -> Event:
        with self._tx() as conn:
            event = self._get_event(conn, event_id)
            now = self._now()
            done = conn.execute(
                update(t.events)
                .where(t.events.c.id == event_id, q.PENDING)
                .values(status=EventStatus.SKIPPED.value, updated_at=now)
            )
            if done.rowcount != 1:
                raise EventNotPending(
                    f"event {event_id} ({event.topic}/{event.message_id}) is "
                    f"{event.status.value}; only a pending event can be skipped"
                )
            self._fault("skip_event.event")
            self._audit_entry(
                conn,
                actor=actor,
                action="skip_event",
                target=event_id,
                workflow=event.workflow,
                detail={"reason": reason},
            )
            return event.model_copy(update={"status": EventStatus.SKIPPED, "updated_at": now})

    # Runs

    def _move_reservations(
        self, conn: Connection, old: str, new: str | None, now: dt.datetime
    ) -> None:
        query = update(t.events).where(t.events.c.reserved_by == old, q.RESERVED)
        if new is None:
            conn.execute(
                query.values(
                    status=EventStatus.PENDING.value,
                    reserved_by=None,
                    attempt=t.events.c.attempt + 1,
                    updated_at=now,
                )
            )
        else:
            conn.execute(query.values(reserved_by=new, updated_at=now))

    def _insert_run(self, conn: Connection, run: RunRecord) -> None:
        conn.execute(
            q.INSERT_RUN,
            {
                "id": run.id,
                "workflow": run.workflow,
                "workflow_version": run.workflow_version,
                "handler": run.handler,
                "kind": run.kind.value,
                "retry_of": run.retry_of,
                "input_state": run.input_state,
                "created_at": run.created_at,
                **_run_values(run),
            },
        )

    def _active_run_id(self, conn: Connection, workflow: str) -> str | None:
        return conn.execute(q.ACTIVE_RUN, {"key_workflow": workflow}).scalar()

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
        with self._tx() as conn:
            wf = self._workflow_row(conn, workflow, lock=True)
            declared = conn.execute(
                select(t.handlers.c.kind).where(
                    t.handlers.c.workflow == workflow,
                    t.handlers.c.name == handler,
                    t.handlers.c.version == wf.version,
                )
            ).scalar()
            rules.check_begin(
                workflow=workflow,
                paused=wf.paused,
                active_run=self._active_run_id(conn, workflow),
                handler_kind=HandlerKind(declared) if declared else None,
                handler=handler,
                kind=kind,
            )
            old = self._run_row(conn, retry_of) if retry_of is not None else None
            ledger = self._ledger_of(conn, old.id) if old else None
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
            self._insert_run(conn, run)
            if old is not None and plan is not None:
                self._fault("begin_run.run")
                take_over = plan.reservations is rules.ReservationMove.TAKE_OVER
                self._move_reservations(conn, old.id, run.id if take_over else None, now)
            return run

    def get_run(self, run_id: str) -> RunRecord:
        with self._tx(write=False) as conn:
            return self._run_row(conn, run_id)

    def list_runs(
        self,
        *,
        workflow: str | None = None,
        status: RunStatus | None = None,
        limit: int | None = None,
    ) -> list[RunRecord]:
        query = select(t.runs)
        if workflow is not None:
            query = query.where(t.runs.c.workflow == workflow)
        if status is not None:
            query = query.where(t.runs.c.status == status.value)
        with self._tx(write=False) as conn:
            return [_run(r) for r in conn.execute(query.order_by(t.runs.c.seq).limit(limit))]

    def active_runs(self) -> list[RunRecord]:
        return self.list_runs(status=RunStatus.ACTIVE)

    def save_prepare_result(self, run_id: str, result: PrepareResult) -> RunRecord:
        with self._tx() as conn:
            run = self._run_row(conn, run_id)
            rules.check_save_prepare(run)
            requested = result.reserved_ids
            found: list[Event] = []
            for topic, ids in requested.items():
                rows = conn.execute(
                    self._pick(conn, q.EVENTS_BY_MESSAGE_IDS),
                    {"key_workflow": run.workflow, "key_topic": topic, "key_ids": ids},
                ).all()
                found.extend(_event(r) for r in rows)
            events = rules.check_reservable(run, requested, found)
            now = self._now()
            for event in events:
                done = conn.execute(
                    q.RESERVE_EVENT,
                    {
                        "was_id": event.id,
                        "was_run": run.id,
                        "status": EventStatus.RESERVED.value,
                        "reserved_by": run.id,
                        "updated_at": now,
                    },
                )
                if done.rowcount != 1:
                    raise EventNotPending(
                        f"event {event.topic}/{event.message_id} was reserved by another run "
                        "meanwhile; nothing was reserved"
                    )
                self._fault("save_prepare_result.event")
            updated = run.model_copy(
                update={"prepare_result": result, "phase": RunPhase.PREPARED, "updated_at": now}
            )
            self._write_run(conn, run, updated)
            self._fault("save_prepare_result.run")
            self._write_handler(conn, run, wake_at=result.wake_at, updated_at=now)
            return updated

    def advance_phase(self, run_id: str, phase: RunPhase) -> RunRecord:
        with self._tx() as conn:
            run = self._run_row(conn, run_id)
            rules.check_advance(run, phase)
            updated = run.model_copy(update={"phase": phase, "updated_at": self._now()})
            self._write_run(conn, run, updated)
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
        with self._tx() as conn:
            run = self._run_row(conn, run_id)
            rules.check_status_change(run, status)
            if release_reservations:
                rules.check_release(run, self._ledger_of(conn, run.id))
            if status is RunStatus.ACTIVE:
                holder = self._active_run_id(conn, run.workflow)
                if holder is not None:
                    raise rules.active_run_exists(run.workflow, holder)
            now = self._now()
            updated = run.model_copy(
                update={
                    "status": status,
                    "error": error,
                    "failure": failure,
                    "resume_at": resume_at,
                    "logs": [*run.logs, *logs],
                    "updated_at": now,
                }
            )
            self._write_run(conn, run, updated)
            if release_reservations:
                self._fault("set_run_status.run")
                self._move_reservations(conn, run.id, None, now)
            return updated

    def _save_state(self, conn: Connection, run: RunRecord, state: JsonValue | Unchanged) -> None:
        if state is UNCHANGED:
            return
        self._write_handler(conn, run, state=state, has_state=True, updated_at=self._now())

    def _write_handler(self, conn: Connection, run: RunRecord, **values: Any) -> None:
        conn.execute(
            q.WRITE_HANDLER, {"was_workflow": run.workflow, "was_name": run.handler, **values}
        )

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
        with self._tx() as conn:
            run = self._run_row(conn, run_id)
            effective = rules.check_commit_consumer(
                run, self._ledger_of(conn, run.id), mutation_result
            )
            final = (
                EventStatus.SKIPPED
                if isinstance(effective, MutationSkipped)
                else EventStatus.CONSUMED
            )
            conn.execute(
                q.SETTLE_RESERVATIONS,
                {"was_run": run.id, "status": final.value, "updated_at": self._now()},
            )
            self._fault("commit_consumer_run.events")
            self._save_state(conn, run, state)
            self._fault("commit_consumer_run.state")
            published = []
            for publication in publishes:
                published.append(self._publish(conn, run.workflow, publication, run.id))
                self._fault("commit_consumer_run.publish")
            committed = self._committed(run, state, logs, mutation_result=effective)
            self._write_run(conn, run, committed)
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
        with self._tx() as conn:
            run = self._run_row(conn, run_id)
            rules.check_producer_commit(run)
            self._save_state(conn, run, state)
            self._fault("commit_producer_run.state")
            published = []
            for publication in publishes:
                published.append(self._publish(conn, run.workflow, publication, run.id))
                self._fault("commit_producer_run.publish")
            self._write_handler(conn, run, next_run_at=next_run_at, updated_at=self._now())
            committed = self._committed(run, state, logs)
            self._write_run(conn, run, committed)
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
        with self._tx() as conn:
            run = self._run_row(conn, run_id)
            rules.check_intent(run, self._ledger_of(conn, run.id))
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
            conn.execute(q.INSERT_ENTRY, _entry_values(entry))
            return entry

    def _change_entry(
        self,
        ledger_id: str,
        allowed: Sequence[LedgerStatus],
        target: LedgerStatus,
        *,
        applied: bool = False,
        **changes: Any,
    ) -> LedgerEntry:
        with self._tx() as conn:
            entry = self._entry_row(conn, ledger_id)
            rules.check_ledger_change(entry, allowed, target.value)
            run = self._run_row(conn, entry.run_id)
            rules.check_ledger_run(run, entry)
            now = self._now()
            if target is LedgerStatus.NEEDS_RECONCILE:
                changes["reconcile_attempts"] = rules.reconcile_attempts_after(entry)
            updated = entry.model_copy(update={"status": target, "updated_at": now, **changes})
            self._write_entry(conn, entry, updated)
            if applied:
                self._fault("ledger.entry")
                run_changes = rules.applied_run_changes(run, updated.result)
                self._write_run(
                    conn, run, run.model_copy(update={**run_changes, "updated_at": now})
                )
            return updated

    def _write_entry(self, conn: Connection, before: LedgerEntry, after: LedgerEntry) -> None:
        values = _entry_values(after)
        for fixed in ("id", "run_id", "workflow", "handler", "created_at"):
            values.pop(fixed)
        done = conn.execute(
            q.WRITE_ENTRY, {"was_id": before.id, "was_status": before.status.value, **values}
        )
        if done.rowcount != 1:
            raise MutationConflict(
                f"ledger entry {before.id} changed while this commit point ran; read it again"
            )

    def record_mutation_applied(self, ledger_id: str, result: JsonValue) -> LedgerEntry:
        return self._change_entry(
            ledger_id,
            _SETTLING,
            LedgerStatus.APPLIED,
            applied=True,
            result=result,
            next_reconcile_at=None,
        )

    def record_mutation_failed(self, ledger_id: str, *, error: str) -> LedgerEntry:
        return self._change_entry(
            ledger_id, _SETTLING, LedgerStatus.FAILED, error=error, next_reconcile_at=None
        )

    def record_needs_reconcile(
        self, ledger_id: str, *, next_reconcile_at: dt.datetime, error: str | None = None
    ) -> LedgerEntry:
        return self._change_entry(
            ledger_id,
            _SETTLING,
            LedgerStatus.NEEDS_RECONCILE,
            error=error,
            next_reconcile_at=next_reconcile_at,
        )

    def record_mutation_indeterminate(
        self, ledger_id: str, *, error: str | None = None
    ) -> LedgerEntry:
        return self._change_entry(
            ledger_id, _SETTLING, LedgerStatus.INDETERMINATE, error=error, next_reconcile_at=None
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
        with self._tx() as conn:
            entry = self._entry_row(conn, ledger_id)
            rules.check_resolution(entry, resolution)
            run = self._run_row(conn, entry.run_id)
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
            self._write_entry(conn, entry, updated)
            if run_changes:
                self._write_run(
                    conn, run, run.model_copy(update={**run_changes, "updated_at": now})
                )
            self._fault("resolve_mutation.entry")
            self._audit_entry(
                conn,
                actor=actor,
                action=f"resolve_mutation:{resolution.value}",
                target=entry.id,
                workflow=entry.workflow,
                detail={"run": run.id, "detail": detail},
            )
            return updated

    def get_ledger_entry(self, ledger_id: str) -> LedgerEntry:
        with self._tx(write=False) as conn:
            return self._entry_row(conn, ledger_id)

    def ledger_entry_for_run(self, run_id: str) -> LedgerEntry | None:
        with self._tx(write=False) as conn:
            return self._ledger_of(conn, run_id)

    def list_ledger(
        self,
        *,
        workflow: str | None = None,
        status: LedgerStatus | None = None,
        limit: int | None = None,
    ) -> list[LedgerEntry]:
        query = select(t.ledger)
        if workflow is not None:
            query = query.where(t.ledger.c.workflow == workflow)
        if status is not None:
            query = query.where(t.ledger.c.status == status.value)
        with self._tx(write=False) as conn:
            return [_entry(r) for r in conn.execute(query.order_by(t.ledger.c.seq).limit(limit))]

    def due_reconciliations(self, now: dt.datetime | None = None) -> list[LedgerEntry]:
        at = now or self._now()
        query = (
            select(t.ledger)
            .where(
                t.ledger.c.status == literal_column("'needs_reconcile'"),
                or_(t.ledger.c.next_reconcile_at.is_(None), t.ledger.c.next_reconcile_at <= at),
            )
            .order_by(t.ledger.c.next_reconcile_at, t.ledger.c.seq)
        )
        with self._tx(write=False) as conn:
            return [_entry(r) for r in conn.execute(query)]

    # Scheduling queries

    def _current(self, kind: HandlerKind) -> Any:
        return and_(
            t.handlers.c.kind == kind.value,
            exists().where(
                t.workflows.c.name == t.handlers.c.workflow,
                t.workflows.c.version == t.handlers.c.version,
                t.workflows.c.paused.is_(False),
            ),
        )

    def due_producers(self, now: dt.datetime | None = None) -> list[HandlerRecord]:
        at = now or self._now()
        with self._tx(write=False) as conn:
            found = self._handler_records(
                conn,
                self._current(HandlerKind.PRODUCER),
                t.handlers.c.next_run_at <= at,
            )
        return sorted(found, key=lambda h: (h.next_run_at or at, h.workflow, h.name))

    def consumers_to_wake(self, now: dt.datetime | None = None) -> list[ConsumerWake]:
        at = now or self._now()
        has_pending = (
            exists()
            .where(
                t.subscriptions.c.workflow == t.handlers.c.workflow,
                t.subscriptions.c.handler == t.handlers.c.name,
                exists().where(
                    t.events.c.workflow == t.subscriptions.c.workflow,
                    t.events.c.topic == t.subscriptions.c.topic,
                    q.PENDING,
                ),
            )
            .label("has_pending")
        )
        query = (
            select(t.handlers.c.workflow, t.handlers.c.name, t.handlers.c.wake_at, has_pending)
            .where(self._current(HandlerKind.CONSUMER))
            .order_by(t.handlers.c.workflow, t.handlers.c.name)
        )
        wakes = []
        with self._tx(write=False) as conn:
            for row in conn.execute(query):
                if row.has_pending:
                    reason = WakeReason.PENDING_EVENTS
                elif row.wake_at is not None and row.wake_at <= at:
                    reason = WakeReason.WAKE_AT
                else:
                    continue
                wakes.append(
                    ConsumerWake(
                        workflow=row.workflow, handler=row.name, reason=reason, wake_at=row.wake_at
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
        with self._tx() as conn:
            return self._audit_entry(
                conn, actor=actor, action=action, target=target, workflow=workflow, detail=detail
            )

    def audit_log(
        self,
        *,
        workflow: str | None = None,
        after_seq: int = 0,
        limit: int | None = None,
    ) -> list[AuditEntry]:
        query = select(t.audit).where(t.audit.c.seq > after_seq)
        if workflow is not None:
            query = query.where(t.audit.c.workflow == workflow)
        with self._tx(write=False) as conn:
            return [_audit(r) for r in conn.execute(query.order_by(t.audit.c.seq).limit(limit))]

    # Leases

    def _lease_row(self, conn: Connection, workflow: str) -> Lease | None:
        return _lease(conn.execute(select(t.leases).where(t.leases.c.workflow == workflow)).first())

    def acquire_lease(self, workflow: str, owner: str, *, ttl: dt.timedelta) -> Lease | None:
        with self._tx() as conn:
            now = self._now()
            current = self._lease_row(conn, workflow)
            if current is None:
                lease = Lease(
                    workflow=workflow, owner=owner, token=1, acquired_at=now, expires_at=now + ttl
                )
                inserted = conn.execute(
                    self._insert(t.leases)
                    .values(**lease.model_dump())
                    .on_conflict_do_nothing()
                    .returning(t.leases.c.token)
                ).first()
                return lease if inserted is not None else None
            live = not current.expired(now)
            if live and current.owner != owner:
                return None
            if live:
                lease = current.model_copy(update={"expires_at": now + ttl})
            else:
                lease = Lease(
                    workflow=workflow,
                    owner=owner,
                    token=current.token + 1,
                    acquired_at=now,
                    expires_at=now + ttl,
                )
            done = conn.execute(
                update(t.leases)
                .where(
                    t.leases.c.workflow == workflow,
                    t.leases.c.token == current.token,
                    t.leases.c.owner == current.owner,
                    t.leases.c.expires_at == current.expires_at,
                )
                .values(**lease.model_dump(exclude={"workflow"}))
            )
            return lease if done.rowcount == 1 else None

    def _cas_lease(self, lease: Lease, action: str, expires_at: dt.datetime, live: bool) -> Lease:
        with self._tx() as conn:
            now = self._now()
            conditions = [
                t.leases.c.workflow == lease.workflow,
                t.leases.c.token == lease.token,
                t.leases.c.owner == lease.owner,
            ]
            if live:
                conditions.append(t.leases.c.expires_at > now)
            done = conn.execute(update(t.leases).where(*conditions).values(expires_at=expires_at))
            if done.rowcount != 1:
                rules.check_lease(
                    self._lease_row(conn, lease.workflow), lease, now, action, live=live
                )
                raise LeaseLost(f"cannot {action}: the lease on {lease.workflow!r} was lost")
            return lease.model_copy(update={"expires_at": expires_at})

    def heartbeat_lease(self, lease: Lease, *, ttl: dt.timedelta) -> Lease:
        return self._cas_lease(lease, "heartbeat", self._now() + ttl, live=True)

    def release_lease(self, lease: Lease) -> None:
        self._cas_lease(lease, "release", self._now(), live=False)

    def get_lease(self, workflow: str) -> Lease | None:
        with self._tx(write=False) as conn:
            return self._lease_row(conn, workflow)

    def count_rows(self) -> Mapping[str, int]:
        """Rows per table (for diagnostics and tests)."""
        with self._tx(write=False) as conn:
            return {
                table.name: conn.execute(select(func.count()).select_from(table)).scalar_one()
                for table in t.metadata.sorted_tables
            }


def _entry_values(entry: LedgerEntry) -> dict[str, Any]:
    return {
        "id": entry.id,
        "run_id": entry.run_id,
        "workflow": entry.workflow,
        "handler": entry.handler,
        "connector": entry.connector,
        "operation": entry.operation,
        "params": entry.params,
        "idempotency_key": entry.idempotency_key,
        "status": entry.status.value,
        "result": entry.result,
        "error": entry.error,
        "ui_title": entry.ui_title,
        "reconcile_attempts": entry.reconcile_attempts,
        "next_reconcile_at": entry.next_reconcile_at,
        "resolved_by": entry.resolved_by,
        "resolved_at": entry.resolved_at,
        "created_at": entry.created_at,
        "updated_at": entry.updated_at,
    }


def _rows_examined(plan: Mapping[str, Any]) -> int:
    loops = int(plan.get("Actual Loops", 1))
    rows = int(plan.get("Actual Rows", 0)) * loops
    removed = int(plan.get("Rows Removed by Filter", 0)) + int(
        plan.get("Rows Removed by Index Recheck", 0)
    )
    return rows + removed + sum(_rows_examined(child) for child in plan.get("Plans", []))
