"""Statements the commit points run on every call, built once.

Building a SQLAlchemy statement (and its cache key) costs several times more than
running a cached one, so the hot lookups and writes are module constants with
bound parameters. Each lookup comes as (plain, ``FOR UPDATE``).
"""

from __future__ import annotations

import functools
import importlib
from collections.abc import Sequence
from typing import Any

from sqlalchemy import (
    ColumnElement,
    Insert,
    Integer,
    Select,
    Update,
    and_,
    bindparam,
    exists,
    insert,
    literal_column,
    or_,
    select,
    update,
)

from keep_sdk.model import HandlerKind
from keep_sdk.stores.sql import _schema as t
from keep_sdk.stores.sql._types import UtcTimestamp

__all__ = [
    "ACTIVE_RUN",
    "CONSUMERS_TO_WAKE",
    "DUE_PRODUCERS",
    "DUE_RECONCILIATIONS",
    "EVENTS_BY_MESSAGE_IDS",
    "EVENT_BY_ID",
    "FINISH_RESERVATIONS",
    "HANDLER_BY_KEY",
    "INSERT_ENTRY",
    "INSERT_RUN",
    "LEASES",
    "LEDGER_BY_ID",
    "LEDGER_BY_RUN",
    "LEDGER_WITH_RUN",
    "PENDING",
    "PENDING_EVENTS",
    "RESERVED",
    "RESERVED_BY_RUN",
    "RUN_BY_ID",
    "WORKFLOWS",
    "WORKFLOW_BY_NAME",
    "WRITE_ENTRY",
    "WRITE_EVENT",
    "WRITE_HANDLER",
    "WRITE_RUN",
    "Lookup",
    "current",
    "events_by_message_ids",
    "insert_event",
    "pending",
    "reserve_events",
    "runs_where",
]

Lookup = tuple[Select[Any], Select[Any]]
"""A query without and with ``FOR UPDATE``."""


def _lookup(query: Select[Any]) -> Lookup:
    return query, query.with_for_update()


RUN_BY_ID = _lookup(select(t.runs).where(t.runs.c.id == bindparam("key_id")))
LEDGER_BY_ID = _lookup(select(t.ledger).where(t.ledger.c.id == bindparam("key_id")))
LEDGER_BY_RUN = _lookup(select(t.ledger).where(t.ledger.c.run_id == bindparam("key_run")))
LEDGER_WITH_RUN = _lookup(
    select(
        *(c.label(f"ledger_{c.name}") for c in t.ledger.c),
        *(c.label(f"run_{c.name}") for c in t.runs.c),
    )
    .join_from(t.ledger, t.runs, t.runs.c.id == t.ledger.c.run_id)
    .where(t.ledger.c.id == bindparam("key_id"))
)
"""A ledger entry's columns (``ledger_*``) beside its run's (``run_*``), plain or locking
both rows."""

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
LEASES = select(t.leases).order_by(t.leases.c.workflow)
INSERT_ENTRY: Insert = insert(t.ledger)

PENDING = t.events.c.status == literal_column("'pending'")
"""Events that are pending, as a literal so databases match the partial pending index."""
RESERVED = t.events.c.status == literal_column("'reserved'")

_WORKFLOW_WITH_GRANTS = (
    select(t.workflows, t.grants.c.permission)
    .outerjoin(t.grants, t.grants.c.workflow == t.workflows.c.name)
    .order_by(t.workflows.c.name, t.grants.c.permission)
)
WORKFLOWS = _WORKFLOW_WITH_GRANTS
"""Every workflow row, once per grant (permission None without grants), by name."""
_ONE_WORKFLOW = _WORKFLOW_WITH_GRANTS.where(t.workflows.c.name == bindparam("key_name"))
WORKFLOW_BY_NAME = (_ONE_WORKFLOW, _ONE_WORKFLOW.with_for_update(of=t.workflows))
"""A workflow row once per grant, plain or locking the workflow row."""

_ONE_HANDLER = (
    select(t.handlers, t.subscriptions.c.topic)
    .outerjoin(
        t.subscriptions,
        and_(
            t.subscriptions.c.workflow == t.handlers.c.workflow,
            t.subscriptions.c.handler == t.handlers.c.name,
        ),
    )
    .where(
        t.handlers.c.workflow == bindparam("key_workflow"),
        t.handlers.c.name == bindparam("key_name"),
    )
    .order_by(t.subscriptions.c.topic)
)
HANDLER_BY_KEY = (_ONE_HANDLER, _ONE_HANDLER.with_for_update(of=t.handlers))
"""A handler row once per subscribed topic (topic None without any), plain or locking it."""
EVENT_BY_ID = _lookup(select(t.events).where(t.events.c.id == bindparam("key_id")))

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

RESERVED_BY_RUN = _lookup(
    select(t.events)
    .where(t.events.c.reserved_by == bindparam("key_run"), RESERVED)
    .order_by(t.events.c.seq)
)
"""The events a run holds, read through the partial index ``ix_events_reserved``."""

WRITE_EVENT: Update = update(t.events).where(
    t.events.c.id == bindparam("was_id"),
    t.events.c.status == bindparam("was_status"),
    t.events.c.reserved_by.is_not_distinct_from(bindparam("was_reserved_by")),
)
"""Set the columns named in the parameters of an event still as read (was_id, was_status,
was_reserved_by)."""

FINISH_RESERVATIONS: Update = update(t.events).where(
    t.events.c.reserved_by == bindparam("key_run"), RESERVED
)
"""Set the columns named in the parameters (status, updated_at) of every event key_run
holds, through the partial index ``ix_events_reserved``."""

WRITE_HANDLER: Update = update(t.handlers).where(
    t.handlers.c.workflow == bindparam("was_workflow"), t.handlers.c.name == bindparam("was_name")
)
"""Set the columns named in the parameters of one handler."""


PENDING_EVENTS = (
    select(t.events)
    .where(
        t.events.c.workflow == bindparam("key_workflow"),
        t.events.c.topic == bindparam("key_topic"),
        PENDING,
    )
    .order_by(t.events.c.seq)
    .limit(bindparam("key_limit", type_=Integer))
)
"""Up to key_limit pending events of a topic, oldest first, through ``ix_events_pending``."""


def current(kind: HandlerKind) -> ColumnElement[bool]:
    """Handlers of `kind` in their workflow's current version, the workflow not paused."""
    return and_(
        t.handlers.c.kind == kind.value,
        exists().where(
            t.workflows.c.name == t.handlers.c.workflow,
            t.workflows.c.version == t.handlers.c.version,
            t.workflows.c.paused.is_(False),
        ),
    )


DUE_PRODUCERS = (
    select(t.handlers)
    .where(
        current(HandlerKind.PRODUCER),
        t.handlers.c.next_run_at <= bindparam("key_now", type_=UtcTimestamp),
    )
    .order_by(t.handlers.c.workflow, t.handlers.c.name)
)
"""Current producers of unpaused workflows whose next run is due at key_now."""

_HAS_PENDING = exists().where(
    t.subscriptions.c.workflow == t.handlers.c.workflow,
    t.subscriptions.c.handler == t.handlers.c.name,
    exists().where(
        t.events.c.workflow == t.subscriptions.c.workflow,
        t.events.c.topic == t.subscriptions.c.topic,
        PENDING,
    ),
)
CONSUMERS_TO_WAKE = (
    select(
        t.handlers.c.workflow,
        t.handlers.c.name,
        t.handlers.c.wake_at,
        _HAS_PENDING.label("has_pending"),
    )
    .where(
        current(HandlerKind.CONSUMER),
        or_(_HAS_PENDING, t.handlers.c.wake_at <= bindparam("key_now", type_=UtcTimestamp)),
    )
    .order_by(t.handlers.c.workflow, t.handlers.c.name)
)
"""Current consumers with a pending event in a subscribed topic or a wakeAt due at key_now."""

DUE_RECONCILIATIONS = (
    select(t.ledger)
    .where(
        t.ledger.c.status == literal_column("'needs_reconcile'"),
        or_(
            t.ledger.c.next_reconcile_at.is_(None),
            t.ledger.c.next_reconcile_at <= bindparam("key_now", type_=UtcTimestamp),
        ),
    )
    .order_by(t.ledger.c.next_reconcile_at, t.ledger.c.seq)
)
"""Ledger entries that need reconciling and are due at key_now, soonest first."""


@functools.cache
def runs_where(
    columns: tuple[str, ...], *, statuses: int | None, limited: bool, newest_first: bool
) -> Select[Any]:
    """Runs whose `columns` equal the parameters of the same names, whose status is one of
    ``status_0`` … (`statuses` of them; None: any), by seq, up to ``limit`` when `limited`.

    One statement per shape, built once, so `FastConnection` runs it.
    """
    query = select(t.runs).where(*(t.runs.c[c] == bindparam(c) for c in columns))
    if statuses is not None:
        query = query.where(
            t.runs.c.status.in_([bindparam(f"status_{i}") for i in range(statuses)])
        )
    query = query.order_by(t.runs.c.seq.desc() if newest_first else t.runs.c.seq)
    return query.limit(bindparam("limit")) if limited else query


_MAX_LISTED_IDS = 32


@functools.cache
def _listed_ids(count: int) -> Lookup:
    return _lookup(
        select(t.events).where(
            t.events.c.workflow == bindparam("key_workflow"),
            t.events.c.topic == bindparam("key_topic"),
            t.events.c.message_id.in_([bindparam(f"key_id_{i}") for i in range(count)]),
        )
    )


def _reservable(ids: ColumnElement[bool]) -> Update:
    return update(t.events).where(
        t.events.c.workflow == bindparam("key_workflow"),
        t.events.c.topic == bindparam("key_topic"),
        ids,
        or_(PENDING, and_(RESERVED, t.events.c.reserved_by == bindparam("key_run"))),
    )


@functools.cache
def _reserve_listed(count: int) -> Update:
    return _reservable(t.events.c.message_id.in_([bindparam(f"key_id_{i}") for i in range(count)]))


_RESERVE_EXPANDING = _reservable(t.events.c.message_id.in_(bindparam("key_ids", expanding=True)))


def reserve_events(ids: Sequence[str]) -> tuple[Update, dict[str, Any]]:
    """The update setting the columns named in its parameters (status, reserved_by,
    updated_at) on a topic's events with messageIds `ids` that are pending or held by
    key_run already, and the parameters for `ids` beside ``key_workflow``, ``key_topic``
    and ``key_run`` (one statement per number of ids up to 32, as
    `events_by_message_ids`)."""
    if not 0 < len(ids) <= _MAX_LISTED_IDS:
        return _RESERVE_EXPANDING, {"key_ids": list(ids)}
    return _reserve_listed(len(ids)), {f"key_id_{i}": m for i, m in enumerate(ids)}


def events_by_message_ids(ids: Sequence[str]) -> tuple[Lookup, dict[str, Any]]:
    """The lookup of a topic's events by message id, and the parameters for `ids` beside
    ``key_workflow`` and ``key_topic``: one statement per number of ids (up to 32, so
    `FastConnection` runs it), `EVENTS_BY_MESSAGE_IDS` with an expanding list beyond."""
    if not 0 < len(ids) <= _MAX_LISTED_IDS:
        return EVENTS_BY_MESSAGE_IDS, {"key_ids": list(ids)}
    return _listed_ids(len(ids)), {f"key_id_{i}": m for i, m in enumerate(ids)}


def pending(workflow: str, topic: str, limit: int) -> Select[Any]:
    """`PENDING_EVENTS` with its parameters bound, so what `peek_cost` and `explain_pending`
    measure is the statement `pending_events` runs."""
    return PENDING_EVENTS.params(key_workflow=workflow, key_topic=topic, key_limit=limit)


@functools.cache
def insert_event(dialect: str) -> Insert:
    """Insert an event unless its key exists, returning its seq (None when it existed).

    Built on first use per dialect (``postgresql`` or ``sqlite``), importing only that
    dialect."""
    module = importlib.import_module(f"sqlalchemy.dialects.{dialect}")
    statement: Insert = module.insert(t.events).on_conflict_do_nothing().returning(t.events.c.seq)
    return statement
