"""Rows to models and back: the column values of runs, events, ledger entries, leases, audit."""

from __future__ import annotations

from collections.abc import Callable
from types import SimpleNamespace
from typing import Any

from pydantic import JsonValue, TypeAdapter
from sqlalchemy import Row

from keep_sdk.model import (
    Event,
    EventStatus,
    FailureKind,
    HandlerKind,
    LedgerEntry,
    LedgerStatus,
    MutationResult,
    PhaseTrace,
    PrepareResult,
    RunPhase,
    RunRecord,
    RunStatus,
    trusted,
)
from keep_sdk.stores._models import AuditEntry, Lease
from keep_sdk.stores._protocol import MutationResultValue

__all__ = [
    "audit_entry",
    "changed_run_values",
    "dump",
    "entry_values",
    "event",
    "event_values",
    "lease",
    "ledger_entry",
    "run",
    "run_values",
    "split",
    "written",
]

_MUTATION_RESULT: TypeAdapter[MutationResultValue] = TypeAdapter(MutationResult)
_TRACE: TypeAdapter[list[PhaseTrace]] = TypeAdapter(list[PhaseTrace])


def dump(model: Any) -> JsonValue:
    """A model as JSON-ready data (None stays None)."""
    if model is None:
        return None
    dumped: JsonValue = model.model_dump(mode="json", by_alias=True)
    return dumped


def event(row: Row[Any]) -> Event:
    """The event of a ``keep_events`` row (the store wrote it: `trusted`; its status is
    still checked)."""
    return trusted(
        Event,
        {
            "id": row.id,
            "workflow": row.workflow,
            "topic": row.topic,
            "message_id": row.message_id,
            "title": row.title,
            "payload": row.payload,
            "status": EventStatus(row.status),
            "reserved_by": row.reserved_by,
            "created_by": row.created_by,
            "attempt": row.attempt,
            "created_at": row.created_at,
            "updated_at": row.updated_at,
        },
    )


def event_values(e: Event) -> dict[str, Any]:
    """Every column of a ``keep_events`` row but seq."""
    return {
        "id": e.id,
        "workflow": e.workflow,
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


def run(row: Row[Any]) -> RunRecord:
    """The run of a ``keep_runs`` row."""
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
        transient_failures=row.transient_failures,
        waiting_permission=row.waiting_permission,
        trace=_TRACE.validate_python(row.trace),
    )


_RUN_COLUMNS: dict[str, Callable[[RunRecord], Any]] = {
    "phase": lambda r: r.phase.value,
    "status": lambda r: r.status.value,
    "prepare_result": lambda r: dump(r.prepare_result),
    "mutation_result": lambda r: dump(r.mutation_result),
    "output_state": lambda r: r.output_state,
    "error": lambda r: r.error,
    "failure": lambda r: r.failure.value if r.failure else None,
    "logs": lambda r: r.logs,
    "updated_at": lambda r: r.updated_at,
    "resume_at": lambda r: r.resume_at,
    "transient_failures": lambda r: r.transient_failures,
    "waiting_permission": lambda r: r.waiting_permission,
    "trace": lambda r: [dump(phase) for phase in r.trace],
}
"""The columns of a ``keep_runs`` row that change after it was inserted (each named as
the `RunRecord` field it holds), and how each is written."""


def run_values(r: RunRecord) -> dict[str, Any]:
    """The columns of a ``keep_runs`` row that change after it was inserted."""
    return {column: value(r) for column, value in _RUN_COLUMNS.items()}


def changed_run_values(before: RunRecord, after: RunRecord) -> dict[str, Any]:
    """`written(before, after, run_values(after))`, with only those columns' values
    built (a run's prepare result and trace are dumped only when they changed)."""
    return {
        column: value(after)
        for column, value in _RUN_COLUMNS.items()
        if getattr(after, column) is not getattr(before, column)
    }


def ledger_entry(row: Row[Any]) -> LedgerEntry:
    """The ledger entry of a ``keep_ledger`` row (the store wrote it: `trusted`; its status
    is still checked)."""
    return trusted(
        LedgerEntry,
        {
            "id": row.id,
            "run_id": row.run_id,
            "workflow": row.workflow,
            "handler": row.handler,
            "connector": row.connector,
            "operation": row.operation,
            "params": row.params,
            "idempotency_key": row.idempotency_key,
            "status": LedgerStatus(row.status),
            "result": row.result,
            "error": row.error,
            "ui_title": row.ui_title,
            "reconcile_attempts": row.reconcile_attempts,
            "next_reconcile_at": row.next_reconcile_at,
            "resolved_by": row.resolved_by,
            "resolved_at": row.resolved_at,
            "created_at": row.created_at,
            "updated_at": row.updated_at,
        },
    )


def entry_values(entry: LedgerEntry) -> dict[str, Any]:
    """Every column of a ``keep_ledger`` row but seq."""
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


def lease(row: Row[Any] | None) -> Lease | None:
    """The lease of a ``keep_leases`` row (None for no row)."""
    if row is None:
        return None
    return Lease(
        workflow=row.workflow,
        owner=row.owner,
        token=row.token,
        acquired_at=row.acquired_at,
        expires_at=row.expires_at,
    )


def audit_entry(row: Row[Any]) -> AuditEntry:
    """The audit entry of a ``keep_audit`` row."""
    return AuditEntry(
        seq=row.seq,
        at=row.at,
        actor=row.actor,
        action=row.action,
        workflow=row.workflow,
        target=row.target,
        detail=row.detail,
    )


def split(row: Any, prefix: str) -> Any:
    """The columns of a joined `row` whose labels start with `prefix`, under their own
    names (for `run`, `ledger_entry`…)."""
    cut = len(prefix)
    return SimpleNamespace(**{k[cut:]: v for k, v in row._asdict().items() if k.startswith(prefix)})


def written(before: Any, after: Any, values: dict[str, Any]) -> dict[str, Any]:
    """The `values` (columns of `after`) whose field is not the very object `before`
    holds: what a ``model_copy(update=…)`` of `before` changed, at least. Identity, not
    equality, so a JSON value that compares equal but is not the same (``1`` and
    ``True``) is still written."""
    return {k: v for k, v in values.items() if getattr(after, k) is not getattr(before, k)}
