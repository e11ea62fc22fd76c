"""The SQL store on SQLAlchemy 2 Core, for SQLite and PostgreSQL.

The commit points are `TransactionalStore`'s, over `SqlTransaction`; this
module opens the engine and transactions, translates database errors, and
answers the queries whose lists grow with their own statements.
"""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Collection, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager, contextmanager, suppress
from functools import partial
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict
from pydantic.alias_generators import to_camel
from sqlalchemy import Connection, Engine, func, insert, literal_column, select, text
from sqlalchemy.exc import DBAPIError, IntegrityError, InterfaceError, OperationalError

from keep_sdk.errors import (
    ActiveRunExists,
    ConfigurationError,
    MutationConflict,
    NotFound,
    StoreConflict,
    StoreUnavailable,
)
from keep_sdk.model import (
    Event,
    EventStatus,
    LedgerEntry,
    LedgerStatus,
    RunRecord,
    RunStatus,
)
from keep_sdk.stores._capabilities import StoreCapability
from keep_sdk.stores._commit import TransactionalStore
from keep_sdk.stores._commit.queries import consumer_wake
from keep_sdk.stores._commit.work import require_workflow
from keep_sdk.stores._models import AuditEntry, ConsumerWake, HandlerRecord, StatusCounts
from keep_sdk.stores._protocol import Clock, FaultHook, utc_now
from keep_sdk.stores._rules import refuse_foreign_events
from keep_sdk.stores._transaction import Transaction
from keep_sdk.stores.sql import _rows as rows
from keep_sdk.stores.sql import _schema as t
from keep_sdk.stores.sql import _statements as q
from keep_sdk.stores.sql._durable import INBOX_CHANNEL
from keep_sdk.stores.sql._engine import (
    BUSY_TIMEOUT_S,
    HELD_READERS,
    WRITE,
    create_store_engine,
    sqlalchemy_url,
)
from keep_sdk.stores.sql._fast import StatementCache
from keep_sdk.stores.sql._file import DatabaseFile
from keep_sdk.stores.sql._group import GroupCommit, GroupCommitTimeout
from keep_sdk.stores.sql._held import HeldReaders
from keep_sdk.stores.sql._mark import CommitMark
from keep_sdk.stores.sql._transaction import SqlTransaction

__all__ = ["AcceptedRollback", "SqlStore", "accept_rollback"]


class AcceptedRollback(BaseModel):
    """What `accept_rollback` did: the commit mark of `database` moved from `mark_before`
    (None: there was none) to `mark_after`, the newest mutation intent the database holds."""

    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, frozen=True)

    store: str
    database: str
    mark_before: int | None
    mark_after: int

    @property
    def forgotten(self) -> int:
        """How many committed mutation intents the database lost (0: it went back by none)."""
        return max(0, (self.mark_before or 0) - self.mark_after)


def accept_rollback(url: str) -> AcceptedRollback:
    """Accept the SQLite store at `url` as it is after it went back in time (a backup a
    person restored on purpose): its commit mark is set to the newest intent it holds, so
    it opens again. Runs the database lost are forgotten; their events run again.

    `ConfigurationError` for a store that is not a SQLite file (only they keep a mark).
    """
    if sqlalchemy_url(url).get_backend_name() != "sqlite":
        raise ConfigurationError(
            f"{url} is not a SQLite store; only SQLite stores keep a commit mark to accept"
        )
    store = SqlStore(url, accept_rollback=True)
    store.close()
    assert store.accepted is not None
    return store.accepted


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


def is_unavailable(error: DBAPIError) -> bool:
    """Whether a database error means "not now" rather than "never": the connection was lost
    or invalidated, the server is restarting or terminated the backend, a serialization
    failure or deadlock, a lock wait that timed out, or a file the database cannot write
    (``database is locked``, disk I/O error, disk full, read-only). Every such error is an
    ``OperationalError`` or ``InterfaceError`` of the driver; data and programming errors
    are not (they are bugs, and stay as raised)."""
    return error.connection_invalidated or isinstance(error, OperationalError | InterfaceError)


_ADVICE = (
    ("readonly", "the database file or its folder is read-only; make them writable"),
    ("read-only", "the database is read-only; make it writable"),
    ("disk i/o", "the disk reported an I/O error; check the disk and free space"),
    ("full", "the disk is full; free space"),
    ("locked", "another program holds the database lock"),
    ("unable to open", "the database file cannot be opened; check the path and permissions"),
)


def _busy_timeout_s(engine: Engine) -> float:
    return float(engine.get_execution_options().get(BUSY_TIMEOUT_S, 30.0))


def _advice(reason: str) -> str:
    lowered = reason.lower()
    for needle, advice in _ADVICE:
        if needle in lowered:
            return advice
    return "check that the database server is running and reachable"


class SqlStore(TransactionalStore):
    """A `Store` in a SQLite file or a PostgreSQL database, selected by URL.

    Opening creates the schema in an empty database, upgrades an older one and
    refuses a newer one (`SchemaVersionError`). `clock` supplies the time;
    `fault_hook`, when set, is called between the writes of every commit point.

    A SQLite store keeps a commit mark beside its file (``keep.db-mark``, see
    `keep_sdk.stores.sql._mark`): a database that lost committed mutation intents is
    refused with `StoreRolledBack` when opened, unless `accept_rollback` (a person
    restored it on purpose), which sets the mark to what the database holds.
    """

    def __init__(
        self,
        url: str,
        *,
        clock: Clock = utc_now,
        fault_hook: FaultHook | None = None,
        accept_rollback: bool = False,
    ) -> None:
        super().__init__(clock=clock, fault_hook=fault_hook)
        self._listener: Any = None
        self.url = url
        self.accepted: AcceptedRollback | None = None
        self.engine = create_store_engine(url)
        self.dialect = self.engine.dialect.name
        self._statements = StatementCache(self.engine.dialect)
        database = self.engine.url.database
        self._mark = (
            CommitMark(Path(database).expanduser().absolute())
            if self.dialect == "sqlite" and database
            else None
        )
        self._file = (
            DatabaseFile(Path(database).expanduser().absolute())
            if self.dialect == "sqlite" and database
            else None
        )
        self._group = (
            GroupCommit(partial(self._connect, True), timeout_s=_busy_timeout_s(self.engine))
            if self.dialect == "sqlite"
            else None
        )
        self._readers = (
            HeldReaders(partial(self._connect, False), limit=HELD_READERS)
            if self.dialect == "sqlite"
            else None
        )
        try:
            with self._sql() as tx:
                t.lock_for_schema(tx.conn)
                t.ensure_schema(tx.conn)
                if self._mark is not None:
                    newest = tx.conn.execute(select(func.max(t.ledger.c.seq))).scalar()
                    if accept_rollback:
                        self.accepted = AcceptedRollback(
                            store=url,
                            database=str(self._mark.database),
                            mark_before=self._mark.read_quietly(),
                            mark_after=int(newest or 0),
                        )
                        self._mark.reset(int(newest or 0))
                    else:
                        self._mark.check(int(newest or 0), store=url)
            if self._file is not None:
                self._file.remember()
        except BaseException:
            self.close()
            raise

    @property
    def capabilities(self) -> frozenset[StoreCapability]:
        """Every `StoreCapability`. A `reading` block is one snapshot on both dialects: a
        SQLite read transaction in WAL mode, a PostgreSQL one at REPEATABLE READ."""
        return frozenset(StoreCapability)

    def __repr__(self) -> str:
        return f"SqlStore({self.engine.url.render_as_string(hide_password=True)!r})"

    def transaction(self, *, write: bool = True) -> AbstractContextManager[Transaction]:
        """A `SqlTransaction` on a connection of its own (``BEGIN IMMEDIATE`` on SQLite
        when `write`)."""
        return self._sql(write=write)

    @contextmanager
    def _sql(self, *, write: bool = True) -> Iterator[SqlTransaction]:
        shared = None if write else self._open_read()
        if shared is not None:
            assert isinstance(shared, SqlTransaction)
            yield shared
            return
        if self._file is not None:
            self._file.check()
        try:
            if write and self._group is not None:
                with self._group.member() as conn:
                    tx = SqlTransaction(
                        conn, dialect=self.dialect, write=True, statements=self._statements
                    )
                    yield tx
            else:
                with self._connection(write) as conn, conn.begin():
                    tx = SqlTransaction(
                        conn, dialect=self.dialect, write=write, statements=self._statements
                    )
                    yield tx
        except IntegrityError as exc:
            raise _translate(exc) from None
        except GroupCommitTimeout as exc:
            raise StoreUnavailable(
                f"{self!r} could not complete the operation: database is locked ({exc}); "
                f"{_advice('database is locked')}",
                reason="database is locked",
            ) from exc
        except DBAPIError as exc:
            if not is_unavailable(exc):
                raise
            reason = " ".join(str(exc.orig).split())
            raise StoreUnavailable(
                f"{self!r} could not complete the operation: {reason}; {_advice(reason)}",
                reason=reason,
            ) from exc
        if tx.newest_intent is not None and self._mark is not None:
            self._mark.advance(tx.newest_intent)

    @contextmanager
    def _connection(self, write: bool) -> Iterator[Connection]:
        """A connection with no transaction open: the thread's kept one for a SQLite read
        (`HeldReaders`) when it has one free, else one from the pool."""
        if not write and self._readers is not None:
            with self._readers.reading() as held:
                if held is not None:
                    yield held
                    return
        with self._connect(write) as conn:
            yield conn

    def _connect(self, write: bool) -> Connection:
        """A new connection from the pool for writes (``BEGIN IMMEDIATE`` on SQLite) or
        reads (``REPEATABLE READ`` on PostgreSQL); `GroupCommit` and `HeldReaders` keep
        theirs from here too."""
        conn = self.engine.connect()
        conn.execution_options(**{WRITE: write})
        if not write and self.dialect == "postgresql":
            conn.execution_options(isolation_level="REPEATABLE READ")
        return conn

    @property
    def group_commits(self) -> tuple[int, int]:
        """(batches committed, write transactions they held) on SQLite since the store
        opened; (0, 0) on PostgreSQL, whose server groups concurrent commits itself."""
        if self._group is None:
            return (0, 0)
        return (self._group.commits, self._group.members)

    def close(self) -> None:
        if self._group is not None:
            self._group.close()
        if self._readers is not None:
            self._readers.close()
        if self._mark is not None:
            self._mark.close()
        self._drop_listener()
        self.engine.dispose()

    # Events

    def wait_for_inbox(self, timeout_s: float) -> bool | None:
        """Block up to `timeout_s` for a new durable notification (PostgreSQL ``LISTEN``);
        True when one arrived. None on SQLite, which cannot be woken: a worker polls.

        The listening connection is opened on first use and again after it was lost: a
        lost or refused connection raises `StoreUnavailable` (with the driver's error as
        its cause) and the next call listens on a new one."""
        if self.dialect != "postgresql":
            return None
        try:
            if self._listener is None:
                raw = self.engine.raw_connection()
                try:
                    driver: Any = raw.driver_connection
                    driver.autocommit = True
                    driver.execute(f"LISTEN {INBOX_CHANNEL}")
                except BaseException:
                    raw.invalidate()
                    raise
                self._listener = raw
            driver = self._listener.driver_connection
            woken = False
            for _ in driver.notifies(timeout=timeout_s, stop_after=1):
                woken = True
        except Exception as exc:
            self._drop_listener()
            reason = " ".join(str(exc).split())
            raise StoreUnavailable(
                f"{self!r} lost its LISTEN connection: {reason}; {_advice(reason)}",
                reason=reason,
            ) from exc
        return woken

    def _drop_listener(self) -> None:
        listener, self._listener = self._listener, None
        if listener is not None:
            with suppress(Exception):
                listener.invalidate()

    def peek_cost(self, workflow: str, topic: str, *, limit: int) -> int:
        """Work done by `pending_events`: SQLite VM steps / 100, or PostgreSQL rows examined."""
        query = q.pending(workflow, topic, limit)
        with self._sql(write=False) as tx:
            conn = tx.conn
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
        query = q.pending(workflow, topic, limit)
        with self._sql(write=False) as tx:
            compiled = str(query.compile(tx.conn, compile_kwargs={"literal_binds": True}))
            if self.dialect == "postgresql":
                return "\n".join(tx.conn.execute(text(f"EXPLAIN {compiled}")).scalars())
            found = tx.conn.exec_driver_sql(f"EXPLAIN QUERY PLAN {compiled}").all()
            return "\n".join(str(r[-1]) for r in found)

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
        with self._sql(write=False) as tx:
            found = tx.conn.execute(query.order_by(t.events.c.seq).limit(limit))
            return [rows.event(r) for r in found]

    def page_events(
        self,
        workflow: str,
        *,
        topic: str | None = None,
        status: EventStatus | None = None,
        created_by: str | None = None,
        before: str | None = None,
        limit: int,
    ) -> list[Event]:
        query = select(t.events).where(t.events.c.workflow == workflow)
        if topic is not None:
            query = query.where(t.events.c.topic == topic)
        if status is not None:
            query = query.where(t.events.c.status == status.value)
        if created_by is not None:
            query = query.where(t.events.c.created_by == created_by)
        with self._sql(write=False) as tx:
            query = _keyset(tx, query, t.events, before, "event")
            return [rows.event(r) for r in tx.conn.execute(query.limit(limit))]

    def page_runs(
        self,
        *,
        workflow: str | None = None,
        status: RunStatus | None = None,
        before: str | None = None,
        limit: int,
    ) -> list[RunRecord]:
        query = select(t.runs)
        if workflow is not None:
            query = query.where(t.runs.c.workflow == workflow)
        if status is not None:
            query = query.where(t.runs.c.status == status.value)
        with self._sql(write=False) as tx:
            query = _keyset(tx, query, t.runs, before, "run")
            return [rows.run(r) for r in tx.conn.execute(query.limit(limit))]

    def page_ledger(
        self,
        *,
        workflow: str | None = None,
        status: LedgerStatus | None = None,
        before: str | None = None,
        limit: int,
    ) -> list[LedgerEntry]:
        query = select(t.ledger)
        if workflow is not None:
            query = query.where(t.ledger.c.workflow == workflow)
        if status is not None:
            query = query.where(t.ledger.c.status == status.value)
        with self._sql(write=False) as tx:
            query = _keyset(tx, query, t.ledger, before, "ledger entry")
            return [rows.ledger_entry(r) for r in tx.conn.execute(query.limit(limit))]

    def runs_by_ids(self, run_ids: Sequence[str]) -> list[RunRecord]:
        wanted = list(dict.fromkeys(run_ids))
        if not wanted:
            return []
        with self._sql(write=False) as tx:
            found = tx.conn.execute(select(t.runs).where(t.runs.c.id.in_(wanted)))
            by_id = {r.id: r for r in (rows.run(row) for row in found)}
        return [by_id[i] for i in wanted if i in by_id]

    def ledger_for_runs(self, run_ids: Sequence[str]) -> list[LedgerEntry]:
        wanted = list(dict.fromkeys(run_ids))
        if not wanted:
            return []
        with self._sql(write=False) as tx:
            found = tx.conn.execute(select(t.ledger).where(t.ledger.c.run_id.in_(wanted)))
            return [rows.ledger_entry(r) for r in found]

    def events_published_by(self, workflow: str, run_ids: Sequence[str]) -> list[Event]:
        wanted = list(dict.fromkeys(run_ids))
        if not wanted:
            return []
        query = select(t.events).where(t.events.c.created_by.in_(wanted)).order_by(t.events.c.seq)
        with self._sql(write=False) as tx:
            found = [rows.event(r) for r in tx.conn.execute(query)]
        return [e for e in found if e.workflow == workflow]

    def bulk_load_events(self, workflow: str, events: Sequence[Event]) -> None:
        """Insert `events` as given (status included), bypassing publish; one transaction.
        `ValueError` when one belongs to another workflow, nothing loaded."""
        refuse_foreign_events(workflow, events)
        values = [rows.event_values(e) for e in events]
        with self._sql() as tx:
            require_workflow(tx, workflow)
            for start in range(0, len(values), 10_000):
                tx.conn.execute(insert(t.events), values[start : start + 10_000])

    def count_by_status(self, workflow: str | None = None) -> StatusCounts:
        """Grouped counts over covering indexes: pending events (``ix_events_pending``),
        the other events (``ix_events_settled``) and runs (``ix_runs_workflow_status``)."""
        e, r = t.events.c, t.runs.c
        queries = {
            "events": [
                select(e.workflow, literal_column("'pending'"), func.count())
                .where(q.PENDING)
                .group_by(e.workflow),
                select(e.workflow, e.status, func.count())
                .where(e.status != literal_column("'pending'"))
                .group_by(e.workflow, e.status),
            ],
            "runs": [select(r.workflow, r.status, func.count()).group_by(r.workflow, r.status)],
        }
        found: dict[str, dict[str, dict[str, int]]] = {"events": {}, "runs": {}}
        with self._sql(write=False) as tx:
            for name, statements in queries.items():
                for query in statements:
                    if workflow is not None:
                        column = e.workflow if name == "events" else r.workflow
                        query = query.where(column == workflow)
                    for row in tx.conn.execute(query):
                        found[name].setdefault(row[0], {})[row[1]] = int(row[2])
        return StatusCounts(events=found["events"], runs=found["runs"])

    # Runs and the ledger

    def list_runs(
        self,
        *,
        workflow: str | None = None,
        status: RunStatus | Collection[RunStatus] | None = None,
        limit: int | None = None,
        handler: str | None = None,
        retry_of: str | None = None,
        newest_first: bool = False,
    ) -> list[RunRecord]:
        statuses = (
            [status.value]
            if isinstance(status, RunStatus)
            else sorted(s.value for s in status)
            if status is not None
            else []
        )
        filters = {"workflow": workflow, "handler": handler, "retry_of": retry_of}
        params: dict[str, Any] = {k: v for k, v in filters.items() if v is not None}
        params.update({f"status_{i}": value for i, value in enumerate(statuses)})
        if limit is not None:
            params["limit"] = limit
        query = q.runs_where(
            tuple(k for k in filters if k in params),
            statuses=len(statuses) if status is not None else None,
            limited=limit is not None,
            newest_first=newest_first,
        )
        with self._sql(write=False) as tx:
            return [rows.run(r) for r in tx.fast.execute(query, params)]

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
        with self._sql(write=False) as tx:
            found = tx.conn.execute(query.order_by(t.ledger.c.seq).limit(limit))
            return [rows.ledger_entry(r) for r in found]

    def due_reconciliations(self, now: dt.datetime | None = None) -> list[LedgerEntry]:
        at = now or self._now()
        with self._sql(write=False) as tx:
            found = tx.fast.execute(q.DUE_RECONCILIATIONS, {"key_now": at})
            return [rows.ledger_entry(r) for r in found]

    # Scheduling queries

    def due_producers(self, now: dt.datetime | None = None) -> list[HandlerRecord]:
        at = now or self._now()
        with self._sql(write=False) as tx:
            found = tx.due_producers(at)
        return sorted(found, key=lambda h: (h.next_run_at or at, h.workflow, h.name))

    def consumers_to_wake(self, now: dt.datetime | None = None) -> list[ConsumerWake]:
        at = now or self._now()
        wakes = []
        with self._sql(write=False) as tx:
            for row in tx.fast.execute(q.CONSUMERS_TO_WAKE, {"key_now": at}):
                wake = consumer_wake(
                    row.workflow, row.name, row.wake_at, pending=bool(row.has_pending), now=at
                )
                if wake is not None:
                    wakes.append(wake)
        return wakes

    # Audit

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
        with self._sql(write=False) as tx:
            found = tx.conn.execute(query.order_by(t.audit.c.seq).limit(limit))
            return [rows.audit_entry(r) for r in found]

    def count_rows(self) -> Mapping[str, int]:
        """Rows per table (for diagnostics and tests)."""
        with self._sql(write=False) as tx:
            return {
                table.name: tx.conn.execute(select(func.count()).select_from(table)).scalar_one()
                for table in t.metadata.sorted_tables
            }


def _keyset(tx: SqlTransaction, query: Any, table: Any, before: str | None, what: str) -> Any:
    """`query` newest first, after the row with id `before` (`NotFound` when there is none)."""
    if before is not None:
        seq = tx.conn.execute(select(table.c.seq).where(table.c.id == before)).scalar()
        if seq is None:
            raise NotFound(f"no {what} {before!r} to page from; start again from the first page")
        query = query.where(table.c.seq < seq)
    return query.order_by(table.c.seq.desc())


def _rows_examined(plan: Mapping[str, Any]) -> int:
    loops = int(plan.get("Actual Loops", 1))
    found = int(plan.get("Actual Rows", 0)) * loops
    removed = int(plan.get("Rows Removed by Filter", 0)) + int(
        plan.get("Rows Removed by Index Recheck", 0)
    )
    return found + removed + sum(_rows_examined(child) for child in plan.get("Plans", []))
