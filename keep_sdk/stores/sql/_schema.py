"""The SQL schema: tables whose constraints enforce the store's invariants, and its version.

Invariants held by the database itself:

- one event per (workflow, topic, messageId): ``uq_events_key``;
- at most one active run per workflow: the partial unique index
  ``uq_runs_one_active`` (``WHERE status = 'active'``);
- at most one ledger entry per run: ``uq_ledger_run``.

Peek and reserve read the partial index ``ix_events_pending`` (``WHERE status =
'pending'``), so their cost does not grow with consumed events.

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
    inspect,
    select,
    text,
)

from keep_sdk.errors import SchemaVersionError
from keep_sdk.stores.sql._types import JsonText, UtcTimestamp

__all__ = [
    "SCHEMA_VERSION",
    "UPGRADES",
    "audit",
    "ensure_schema",
    "events",
    "grants",
    "handlers",
    "leases",
    "ledger",
    "metadata",
    "runs",
    "schema_info",
    "subscriptions",
    "workflow_versions",
    "workflows",
]

SCHEMA_VERSION = 3

metadata = MetaData()

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
Index(
    "ix_events_pending",
    events.c.workflow,
    events.c.topic,
    events.c.seq,
    sqlite_where=events.c.status == "pending",
    postgresql_where=events.c.status == "pending",
)
Index(
    "ix_events_reserved",
    events.c.reserved_by,
    sqlite_where=events.c.status == "reserved",
    postgresql_where=events.c.status == "reserved",
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
Index(
    "uq_runs_one_active",
    runs.c.workflow,
    unique=True,
    sqlite_where=runs.c.status == "active",
    postgresql_where=runs.c.status == "active",
)
Index("ix_runs_workflow_status", runs.c.workflow, runs.c.status)

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
Index(
    "ix_ledger_reconcile",
    ledger.c.next_reconcile_at,
    sqlite_where=ledger.c.status == "needs_reconcile",
    postgresql_where=ledger.c.status == "needs_reconcile",
)

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


def _add_run_traces(conn: Connection) -> None:
    """Version 2 → 3: ``keep_runs.trace``, the calls of each phase of a run.

    Runs recorded before the upgrade have no trace (an empty list): the calls
    they made were never kept.
    """
    conn.execute(text("ALTER TABLE keep_runs ADD COLUMN trace TEXT NOT NULL DEFAULT '[]'"))


UPGRADES: dict[int, Upgrade] = {1: _add_run_facts, 2: _add_run_traces}
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
