"""Statements the commit points run on every call, built once.

Building a SQLAlchemy statement (and its cache key) costs several times more than
running a cached one, so the hot lookups and writes are module constants with
bound parameters. Each lookup comes as (plain, ``FOR UPDATE``).
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import (
    Insert,
    Select,
    Update,
    and_,
    bindparam,
    insert,
    literal_column,
    or_,
    select,
    update,
)
from sqlalchemy.dialects import postgresql, sqlite

from keep_sdk.stores.sql import _schema as t

__all__ = [
    "ACTIVE_RUN",
    "EVENTS_BY_MESSAGE_IDS",
    "EVENT_BY_KEY",
    "INSERT_ENTRY",
    "INSERT_RUN",
    "LEDGER_BY_ID",
    "LEDGER_BY_RUN",
    "PENDING",
    "REPLACE_EVENT",
    "RESERVED",
    "RESERVE_EVENT",
    "RUN_BY_ID",
    "SETTLE_RESERVATIONS",
    "WORKFLOW_BY_NAME",
    "WRITE_ENTRY",
    "WRITE_HANDLER",
    "WRITE_RUN",
    "Lookup",
    "insert_event",
]

Lookup = tuple[Select[Any], Select[Any]]
"""A query without and with ``FOR UPDATE``."""


def _lookup(query: Select[Any]) -> Lookup:
    return query, query.with_for_update()


RUN_BY_ID = _lookup(select(t.runs).where(t.runs.c.id == bindparam("key_id")))
LEDGER_BY_ID = _lookup(select(t.ledger).where(t.ledger.c.id == bindparam("key_id")))
LEDGER_BY_RUN = _lookup(select(t.ledger).where(t.ledger.c.run_id == bindparam("key_run")))
EVENT_BY_KEY = _lookup(
    select(t.events).where(
        t.events.c.workflow == bindparam("key_workflow"),
        t.events.c.topic == bindparam("key_topic"),
        t.events.c.message_id == bindparam("key_message"),
    )
)

WRITE_RUN: Update = update(t.runs).where(
    t.runs.c.id == bindparam("was_id"),
    t.runs.c.status == bindparam("was_status"),
    t.runs.c.phase == bindparam("was_phase"),
)
"""Set the columns named in the parameters of a run still as read (was_id, was_status,
was_phase)."""

WRITE_ENTRY: Update = update(t.ledger).where(
    t.ledger.c.id == bindparam("was_id"), t.ledger.c.status == bindparam("was_status")
)
"""Set the columns named in the parameters of a ledger entry still as read."""

INSERT_RUN: Insert = insert(t.runs)
INSERT_ENTRY: Insert = insert(t.ledger)

PENDING = t.events.c.status == literal_column("'pending'")
"""Events that are pending, as a literal so databases match the partial pending index."""
RESERVED = t.events.c.status == literal_column("'reserved'")

WORKFLOW_BY_NAME = (
    select(t.workflows).where(t.workflows.c.name == bindparam("key_name")),
    select(t.workflows)
    .where(t.workflows.c.name == bindparam("key_name"))
    .with_for_update(read=True),
)
"""A workflow row, plain or ``FOR SHARE`` (begin_run: a pause waits for it)."""

ACTIVE_RUN = select(t.runs.c.id).where(
    t.runs.c.workflow == bindparam("key_workflow"), t.runs.c.status == literal_column("'active'")
)

EVENTS_BY_MESSAGE_IDS = _lookup(
    select(t.events).where(
        t.events.c.workflow == bindparam("key_workflow"),
        t.events.c.topic == bindparam("key_topic"),
        t.events.c.message_id.in_(bindparam("key_ids", expanding=True)),
    )
)

RESERVE_EVENT: Update = update(t.events).where(
    t.events.c.id == bindparam("was_id"),
    or_(PENDING, and_(RESERVED, t.events.c.reserved_by == bindparam("was_run"))),
)
"""Reserve one event if it is pending (or already held by this run)."""

REPLACE_EVENT: Update = update(t.events).where(
    t.events.c.seq == bindparam("was_seq"), PENDING, t.events.c.reserved_by.is_(None)
)
"""Replace title and payload of an event still pending and unreserved."""

SETTLE_RESERVATIONS: Update = update(t.events).where(
    t.events.c.reserved_by == bindparam("was_run"), RESERVED
)
"""Consume or skip the events a run holds."""

WRITE_HANDLER: Update = update(t.handlers).where(
    t.handlers.c.workflow == bindparam("was_workflow"), t.handlers.c.name == bindparam("was_name")
)
"""Set the columns named in the parameters of one handler."""


def insert_event(dialect: str) -> Insert:
    """Insert an event unless its key exists, returning its seq (None when it existed)."""
    return _INSERT_EVENT[dialect]


def _insert_event(module: Any) -> Insert:
    statement: Insert = module.insert(t.events).on_conflict_do_nothing().returning(t.events.c.seq)
    return statement


_INSERT_EVENT = {"postgresql": _insert_event(postgresql), "sqlite": _insert_event(sqlite)}
