"""The SQL schema: tables whose constraints enforce the store's invariants, and its version.

Invariants held by the database itself:

- one event per (workflow, topic, messageId): ``uq_events_key``;
- at most one active run per workflow: the partial unique index
  ``uq_runs_one_active`` (``WHERE status = 'active'``);
- at most one ledger entry per run: ``uq_ledger_run``.

Peek and reserve read the partial index ``ix_events_pending`` (``WHERE status =
'pending'``), so their cost does not grow with consumed events. Keyset pages
(`SupportsPages`) read the ``ix_*_seq`` indexes and ``ix_events_created_by``.

Upgrading: `SCHEMA_VERSION` is the version this code writes. A database at an
older version is upgraded on open by the steps in `UPGRADES` (version ``n`` →
``n + 1``, each in the opening transaction); a newer one is refused with
`SchemaVersionError`.
"""

from __future__ import annotations

from collections.abc import Callable

from sqlalchemy import (
    Boolean,
    CheckConstraint,
    Column,
    ColumnElement,
    Connection,
    ForeignKey,
    ForeignKeyConstraint,
    Index,
    Integer,
    MetaData,
    PrimaryKeyConstraint,
    String,
    Table,
    Text,
    UniqueConstraint,
    event,
    inspect,
    select,
    text,
)

from keep_sdk.errors import SchemaVersionError
from keep_sdk.stores.sql._types import JsonText, UtcTimestamp

__all__ = [
    "SCHEMA_VERSION",
    "UPGRADES",
    "attempts",
    "audit",
    "ensure_schema",
    "events",
    "grants",
    "handlers",
    "invocations",
    "leases",
    "ledger",
    "metadata",
    "notifications",
    "runs",
    "schema_info",
    "subscriptions",
    "workflow_versions",
    "workflows",
]

SCHEMA_VERSION = 7

metadata = MetaData()


def _partial_index(
    name: str, *columns: Column[object], where: ColumnElement[bool], unique: bool = False
) -> Index:
    """An index over the rows ``where`` holds, on SQLite and on PostgreSQL.

    The PostgreSQL condition is attached when the index is created on a PostgreSQL
    connection, so declaring the schema loads no PostgreSQL dialect (SQLAlchemy loads a
    dialect to check its keyword arguments)."""
    index = Index(name, *columns, unique=unique, sqlite_where=where)

    def on_postgresql(target: Index, connection: Connection, **_: object) -> None:
        if connection.dialect.name == "postgresql":
            target.dialect_kwargs["postgresql_where"] = where

    event.listen(index, "before_create", on_postgresql)
    return index


_ID = String(64)
_NAME = String(200)

schema_info = Table(
    "keep_schema",
    metadata,
    Column("id", Integer, primary_key=True),
    Column("version", Integer, nullable=False),
    CheckConstraint("id = 1", name="ck_keep_schema_single_row"),
)

workflows = Table(
    "keep_workflows",
    metadata,
    Column("name", _NAME, primary_key=True),
    Column("version", Integer, nullable=False),
    Column("paused", Boolean, nullable=False, default=False),
    Column("created_at", UtcTimestamp, nullable=False),
    Column("updated_at", UtcTimestamp, nullable=False),
)

workflow_versions = Table(
    "keep_workflow_versions",
    metadata,
    Column("workflow", _NAME, ForeignKey("keep_workflows.name"), nullable=False),
    Column("version", Integer, nullable=False),
    Column("source", Text, nullable=False),
    Column("manifest", JsonText, nullable=False),
    Column("handlers", JsonText, nullable=False),
    Column("created_at", UtcTimestamp, nullable=False),
    PrimaryKeyConstraint("workflow", "version"),
)

grants = Table(
    "keep_grants",
    metadata,
    Column("workflow", _NAME, ForeignKey("keep_workflows.name"), nullable=False),
    Column("permission", _NAME, nullable=False),
    Column("granted_at", UtcTimestamp, nullable=False),
    PrimaryKeyConstraint("workflow", "permission"),
)

handlers = Table(
    "keep_handlers",
    metadata,
    Column("workflow", _NAME, ForeignKey("keep_workflows.name"), nullable=False),
    Column("name", _NAME, nullable=False),
    Column("kind", String(16), nullable=False),
    Column("version", Integer, nullable=False),
    Column("has_state", Boolean, nullable=False, default=False),
    Column("state", JsonText, nullable=False),
    Column("wake_at", UtcTimestamp),
    Column("next_run_at", UtcTimestamp),
    Column("updated_at", UtcTimestamp, nullable=False),
    PrimaryKeyConstraint("workflow", "name"),
)

subscriptions = Table(
    "keep_subscriptions",
    metadata,
    Column("workflow", _NAME, nullable=False),
    Column("handler", _NAME, nullable=False),
    Column("topic", _NAME, nullable=False),
    PrimaryKeyConstraint("workflow", "handler", "topic"),
    ForeignKeyConstraint(["workflow", "handler"], ["keep_handlers.workflow", "keep_handlers.name"]),
)

events = Table(
    "keep_events",
    metadata,
    Column("seq", Integer, primary_key=True, autoincrement=True),
    Column("id", _ID, nullable=False, unique=True),
    Column("workflow", _NAME, ForeignKey("keep_workflows.name"), nullable=False),
    Column("topic", _NAME, nullable=False),
    Column("message_id", _NAME, nullable=False),
    Column("title", Text, nullable=False),
    Column("payload", JsonText, nullable=False),
    Column("status", String(16), nullable=False),
    Column("reserved_by", _ID),
    Column("created_by", _ID),
    Column("attempt", Integer, nullable=False, default=0),
    Column("created_at", UtcTimestamp, nullable=False),
    Column("updated_at", UtcTimestamp, nullable=False),
    UniqueConstraint("workflow", "topic", "message_id", name="uq_events_key"),
    CheckConstraint(
        "status IN ('pending', 'reserved', 'consumed', 'skipped')", name="ck_events_status"
    ),
    CheckConstraint(
        "status <> 'reserved' OR reserved_by IS NOT NULL", name="ck_events_reserved_by"
    ),
    CheckConstraint("status <> 'pending' OR reserved_by IS NULL", name="ck_events_pending"),
)
_partial_index(
    "ix_events_pending",
    events.c.workflow,
    events.c.topic,
    events.c.seq,
    where=events.c.status == "pending",
)
Index("ix_events_workflow_seq", events.c.workflow, events.c.seq)
Index("ix_events_topic_seq", events.c.workflow, events.c.topic, events.c.seq)
Index("ix_events_created_by", events.c.created_by)
_COUNT_INDEX = _partial_index(
    "ix_events_settled",
    events.c.workflow,
    events.c.status,
    where=events.c.status != "pending",
)
"""Events by workflow and status once they left ``pending`` (those are counted from
``ix_events_pending``): a partial index a peek, which asks for ``pending``, never uses."""
_partial_index(
    "ix_events_reserved",
    events.c.reserved_by,
    where=events.c.status == "reserved",
)

runs = Table(
    "keep_runs",
    metadata,
    Column("seq", Integer, primary_key=True, autoincrement=True),
    Column("id", _ID, nullable=False, unique=True),
    Column("workflow", _NAME, ForeignKey("keep_workflows.name"), nullable=False),
    Column("workflow_version", Integer, nullable=False),
    Column("handler", _NAME, nullable=False),
    Column("kind", String(16), nullable=False),
    Column("phase", String(16), nullable=False),
    Column("status", String(32), nullable=False),
    Column("retry_of", _ID),
    Column("prepare_result", JsonText, nullable=False),
    Column("mutation_result", JsonText, nullable=False),
    Column("input_state", JsonText, nullable=False),
    Column("output_state", JsonText, nullable=False),
    Column("error", Text),
    Column("failure", String(16)),
    Column("logs", JsonText, nullable=False),
    Column("created_at", UtcTimestamp, nullable=False),
    Column("updated_at", UtcTimestamp, nullable=False),
    Column("resume_at", UtcTimestamp),
    Column("transient_failures", Integer, nullable=False, default=0, server_default="0"),
    Column("waiting_permission", Text),
    Column("trace", JsonText, nullable=False, default=[], server_default="[]"),
)
_partial_index(
    "uq_runs_one_active",
    runs.c.workflow,
    unique=True,
    where=runs.c.status == "active",
)
Index("ix_runs_workflow_status", runs.c.workflow, runs.c.status)
_PLANNING_INDEXES: tuple[Index, ...] = (
    Index("ix_runs_status", runs.c.status, runs.c.seq),
    Index("ix_runs_handler", runs.c.workflow, runs.c.handler, runs.c.seq),
    Index("ix_runs_retry_of", runs.c.retry_of),
)
Index("ix_runs_workflow_seq", runs.c.workflow, runs.c.seq)

ledger = Table(
    "keep_ledger",
    metadata,
    Column("seq", Integer, primary_key=True, autoincrement=True),
    Column("id", _ID, nullable=False, unique=True),
    Column("run_id", _ID, ForeignKey("keep_runs.id"), nullable=False),
    Column("workflow", _NAME, nullable=False),
    Column("handler", _NAME, nullable=False),
    Column("connector", _NAME, nullable=False),
    Column("operation", _NAME, nullable=False),
    Column("params", JsonText, nullable=False),
    Column("idempotency_key", Text, nullable=False),
    Column("status", String(16), nullable=False),
    Column("result", JsonText, nullable=False),
    Column("error", Text),
    Column("ui_title", Text),
    Column("reconcile_attempts", Integer, nullable=False, default=0),
    Column("next_reconcile_at", UtcTimestamp),
    Column("resolved_by", Text),
    Column("resolved_at", UtcTimestamp),
    Column("created_at", UtcTimestamp, nullable=False),
    Column("updated_at", UtcTimestamp, nullable=False),
    UniqueConstraint("run_id", name="uq_ledger_run"),
)
_PLANNING_INDEXES += (Index("ix_ledger_status", ledger.c.status, ledger.c.seq),)
_partial_index(
    "ix_ledger_reconcile",
    ledger.c.next_reconcile_at,
    where=ledger.c.status == "needs_reconcile",
)

Index("ix_ledger_workflow_seq", ledger.c.workflow, ledger.c.seq)

audit = Table(
    "keep_audit",
    metadata,
    Column("seq", Integer, primary_key=True, autoincrement=True),
    Column("at", UtcTimestamp, nullable=False),
    Column("actor", Text, nullable=False),
    Column("action", Text, nullable=False),
    Column("workflow", _NAME),
    Column("target", Text, nullable=False),
    Column("detail", JsonText, nullable=False),
)
Index("ix_audit_workflow", audit.c.workflow, audit.c.seq)

leases = Table(
    "keep_leases",
    metadata,
    Column("workflow", _NAME, primary_key=True),
    Column("owner", _NAME, nullable=False),
    Column("token", Integer, nullable=False),
    Column("acquired_at", UtcTimestamp, nullable=False),
    Column("expires_at", UtcTimestamp, nullable=False),
)

invocations = Table(
    "keep_invocations",
    metadata,
    Column("seq", Integer, primary_key=True, autoincrement=True),
    Column("id", _ID, nullable=False, unique=True),
    Column("run_id", _ID, ForeignKey("keep_runs.id"), nullable=False, unique=True),
    Column("correlation_key", _ID, nullable=False, unique=True),
    Column("workflow", _NAME, nullable=False),
    Column("status", String(16), nullable=False),
    Column("claim_version", Integer, nullable=False),
    Column("next_poll_at", UtcTimestamp),
    Column("timeout_at", UtcTimestamp),
    Column("doc", JsonText, nullable=False),
)
_partial_index(
    "ix_invocations_poll",
    invocations.c.next_poll_at,
    where=invocations.c.status == "active",
)
_partial_index(
    "ix_invocations_timeout",
    invocations.c.timeout_at,
    where=invocations.c.status == "active",
)

notifications = Table(
    "keep_notifications",
    metadata,
    Column("seq", Integer, primary_key=True, autoincrement=True),
    Column("id", _ID, nullable=False, unique=True),
    Column("invocation_id", _ID, ForeignKey("keep_invocations.id"), nullable=False),
    Column("outcome", String(16), nullable=False),
    Column("doc", JsonText, nullable=False),
)
Index("ix_notifications_invocation", notifications.c.invocation_id, notifications.c.seq)
_partial_index(
    "ix_notifications_pending",
    notifications.c.seq,
    where=notifications.c.outcome == "pending",
)
_partial_index(
    "uq_notifications_applied",
    notifications.c.invocation_id,
    unique=True,
    where=notifications.c.outcome == "applied",
)

attempts = Table(
    "keep_attempts",
    metadata,
    Column("seq", Integer, primary_key=True, autoincrement=True),
    Column("invocation_id", _ID, ForeignKey("keep_invocations.id"), nullable=False),
    Column("doc", JsonText, nullable=False),
)
Index("ix_attempts_invocation", attempts.c.invocation_id, attempts.c.seq)

Upgrade = Callable[[Connection], None]

_TRANSIENT_MARK = "host: transient failure "
_PERMISSION_MARK = "permission '"
_UNFINISHED = ("active", "paused:transient", "paused:approval", "paused:reconciliation")


def _add_run_facts(conn: Connection) -> None:
    """Version 1 → 2: ``keep_runs.transient_failures`` and ``waiting_permission``.

    Version 1 kept both facts only as text: the runtime logged one line starting
    with ``host: transient failure `` per transient pause, and a paused:approval
    run's error named ``permission '<name>'``. Unfinished runs get the values
    read from that text, so a backoff or a wait survives the upgrade.
    """
    conn.execute(
        text("ALTER TABLE keep_runs ADD COLUMN transient_failures INTEGER NOT NULL DEFAULT 0")
    )
    conn.execute(text("ALTER TABLE keep_runs ADD COLUMN waiting_permission TEXT"))
    found = conn.execute(
        select(runs.c.id, runs.c.status, runs.c.logs, runs.c.error).where(
            runs.c.status.in_(_UNFINISHED)
        )
    ).all()
    for row in found:
        count = sum(line.startswith(_TRANSIENT_MARK) for line in row.logs)
        error = row.error or ""
        permission = None
        if row.status == "paused:approval" and _PERMISSION_MARK in error:
            permission = error.split(_PERMISSION_MARK, 1)[1].split("'", 1)[0]
        if count or permission:
            conn.execute(
                runs.update()
                .where(runs.c.id == row.id)
                .values(transient_failures=count, waiting_permission=permission)
            )


def _add_planning_indexes(conn: Connection) -> None:
    """Version 2 → 3: indexes that answer the scheduler's questions without reading the
    run history (runs by status, a handler's latest run, the retries of a run, ledger
    entries by status)."""
    for index in _PLANNING_INDEXES:
        index.create(conn, checkfirst=True)


_PAGE_INDEXES = (
    "ix_events_workflow_seq",
    "ix_events_topic_seq",
    "ix_events_created_by",
    "ix_runs_workflow_seq",
    "ix_ledger_workflow_seq",
)


def _add_page_indexes(conn: Connection) -> None:
    """Version 3 → 4: the indexes that keep a page of events, runs or ledger entries (newest
    first, by workflow and topic, or the events a run published) independent of their number."""
    for table in (events, runs, ledger):
        for index in table.indexes:
            if index.name in _PAGE_INDEXES:
                index.create(conn, checkfirst=True)


def _add_durable_operations(conn: Connection) -> None:
    """Version 4 → 5: the durable-operation tables (invocations, notifications, attempts).

    New tables only (each created unless it exists); no existing row changes.
    """
    for table in (invocations, notifications, attempts):
        table.create(conn, checkfirst=True)


def _add_run_traces(conn: Connection) -> None:
    """Version 5 → 6: ``keep_runs.trace``, the calls of each phase of a run.

    Runs recorded before the upgrade have no trace (an empty list): the calls
    they made were never kept.
    """
    conn.execute(text("ALTER TABLE keep_runs ADD COLUMN trace TEXT NOT NULL DEFAULT '[]'"))


def _add_count_index(conn: Connection) -> None:
    """Version 6 → 7: ``ix_events_settled``, so the status report counts a workflow's
    events by status from indexes instead of reading every event."""
    _COUNT_INDEX.create(conn, checkfirst=True)


UPGRADES: dict[int, Upgrade] = {
    1: _add_run_facts,
    2: _add_planning_indexes,
    3: _add_page_indexes,
    4: _add_durable_operations,
    5: _add_run_traces,
    6: _add_count_index,
}
"""Upgrade steps by the version they start from: ``UPGRADES[n]`` takes a database from
``n`` to ``n + 1``."""


def ensure_schema(conn: Connection) -> int:
    """Create the schema in an empty database or upgrade an older one; return the version.

    Must run inside a write transaction. Raises `SchemaVersionError` for a database
    written by a newer keep-sdk, or one with tables but no version row.
    """
    if not inspect(conn).has_table(schema_info.name):
        if inspect(conn).has_table(events.name):
            raise SchemaVersionError(
                "the database has keep tables but no keep_schema version row; it was not "
                "created by keep-sdk or was damaged. Use a new database."
            )
        metadata.create_all(conn)
        conn.execute(schema_info.insert().values(id=1, version=SCHEMA_VERSION))
        return SCHEMA_VERSION
    found = conn.execute(select(schema_info.c.version).where(schema_info.c.id == 1)).scalar()
    if found is None:
        raise SchemaVersionError("the keep_schema table has no version row; use a new database")
    if found > SCHEMA_VERSION:
        raise SchemaVersionError(
            f"the database schema is version {found}, newer than the version {SCHEMA_VERSION} "
            "this keep-sdk supports; upgrade keep-sdk to use it"
        )
    version = int(found)
    while version < SCHEMA_VERSION:
        step = UPGRADES.get(version)
        if step is None:
            raise SchemaVersionError(
                f"no upgrade step from schema version {version}; upgrade keep-sdk step by step"
            )
        step(conn)
        version += 1
        conn.execute(schema_info.update().values(version=version))
    return version


def lock_for_schema(conn: Connection) -> None:
    """Serialize schema creation between processes (PostgreSQL advisory lock)."""
    if conn.dialect.name == "postgresql":
        conn.execute(text("SELECT pg_advisory_xact_lock(4242000001)"))
