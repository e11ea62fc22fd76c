"""Commit points of the mutation ledger: intent, the host's settlements, a person's answer."""

from __future__ import annotations

import datetime as dt
from typing import Any

from pydantic import JsonValue

from keep_sdk.model import LedgerEntry, LedgerStatus, RunPhase, RunRecord
from keep_sdk.stores import _rules as rules
from keep_sdk.stores._commit._core import StoreCore
from keep_sdk.stores._commit.work import (
    Work,
    in_utc,
    no_entry,
    no_run,
    require_entry,
    require_run,
)
from keep_sdk.stores._models import Resolution
from keep_sdk.stores.faults import FaultPoint

__all__ = ["LedgerPoints", "insert_intent", "settle"]

_SETTLING = (LedgerStatus.IN_FLIGHT, LedgerStatus.NEEDS_RECONCILE)


class LedgerPoints(StoreCore):
    """record_mutation_intent, the record_* settlements and resolve_mutation."""

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
        with self._commit() as w:
            run = require_run(w.tx, run_id)
            return insert_intent(
                w,
                run,
                connector=connector,
                operation=operation,
                params=params,
                idempotency_key=idempotency_key,
                ui_title=ui_title,
            )

    def record_mutation_applied(self, ledger_id: str, result: JsonValue) -> LedgerEntry:
        return self._settle(ledger_id, LedgerStatus.APPLIED, result=result, next_reconcile_at=None)

    def record_mutation_failed(self, ledger_id: str, *, error: str) -> LedgerEntry:
        return self._settle(ledger_id, LedgerStatus.FAILED, error=error, next_reconcile_at=None)

    def record_needs_reconcile(
        self, ledger_id: str, *, next_reconcile_at: dt.datetime, error: str | None = None
    ) -> LedgerEntry:
        return self._settle(
            ledger_id,
            LedgerStatus.NEEDS_RECONCILE,
            error=error,
            next_reconcile_at=in_utc(next_reconcile_at),
        )

    def record_mutation_indeterminate(
        self, ledger_id: str, *, error: str | None = None
    ) -> LedgerEntry:
        return self._settle(
            ledger_id, LedgerStatus.INDETERMINATE, error=error, next_reconcile_at=None
        )

    def record_mutation_applied_run(self, ledger_id: str, result: JsonValue) -> RunRecord:
        """`record_mutation_applied`, answering with the run as it now stands (``mutated``)."""
        with self._commit() as w:
            return settle(w, ledger_id, LedgerStatus.APPLIED, result=result)[1]

    def _settle(self, ledger_id: str, target: LedgerStatus, **changes: Any) -> LedgerEntry:
        with self._commit() as w:
            return settle(w, ledger_id, target, **changes)[0]

    def resolve_mutation(
        self,
        ledger_id: str,
        resolution: Resolution,
        *,
        actor: str,
        detail: str | None = None,
        result: JsonValue = None,
    ) -> LedgerEntry:
        with self._commit() as w:
            entry = require_entry(w.tx, ledger_id)
            rules.check_resolution(entry, resolution)
            run = require_run(w.tx, entry.run_id)
            rules.check_ledger_run(run, entry)
            target, run_changes = rules.resolution_effect(run, resolution, result)
            updated = w.update_entry(
                entry,
                entry.model_copy(
                    update={
                        "status": target,
                        "resolved_by": actor,
                        "resolved_at": w.now,
                        "next_reconcile_at": None,
                        "result": result if resolution is Resolution.HAPPENED else entry.result,
                        "updated_at": w.now,
                    }
                ),
            )
            if run_changes:
                w.update_run(run, run.model_copy(update={**run_changes, "updated_at": w.now}))
            w.fault(FaultPoint.RESOLVE_ENTRY)
            w.audit(
                actor=actor,
                action=f"resolve_mutation:{resolution.value}",
                target=entry.id,
                workflow=entry.workflow,
                detail={"run": run.id, "detail": detail},
            )
            return updated


def settle(
    w: Work, ledger_id: str, target: LedgerStatus, *, move_run: bool = True, **changes: Any
) -> tuple[LedgerEntry, RunRecord]:
    """Move an unsettled entry to `target`; an applied mutation also moves its run, unless
    not `move_run` (the caller writes the run). The entry and its run as they now stand."""
    entry, run = w.tx.ledger_entry_and_run(ledger_id)
    if entry is None:
        raise no_entry(ledger_id)
    rules.check_ledger_change(entry, _SETTLING, target.value)
    if run is None:
        raise no_run(entry.run_id)
    rules.check_ledger_run(run, entry)
    if target is LedgerStatus.NEEDS_RECONCILE:
        changes["reconcile_attempts"] = rules.reconcile_attempts_after(entry)
    updated = w.update_entry(
        entry, entry.model_copy(update={"status": target, "updated_at": w.now, **changes})
    )
    if target is not LedgerStatus.APPLIED or not move_run:
        return updated, run
    w.fault(FaultPoint.LEDGER_ENTRY)
    run_changes = rules.applied_run_changes(run, updated.result)
    moved = w.update_run(run, run.model_copy(update={**run_changes, "updated_at": w.now}))
    return updated, moved


def insert_intent(
    w: Work,
    run: RunRecord,
    *,
    connector: str,
    operation: str,
    params: JsonValue,
    idempotency_key: str,
    ui_title: str | None,
    first: bool = False,
) -> LedgerEntry:
    """Record `run`'s one mutation as ``in_flight``, moving the run from ``prepared`` to
    ``mutating`` in the same transaction; refused unless the run may mutate now. `first`:
    the run was inserted by this transaction, so it has no entry yet."""
    rules.check_intent(run, None if first else w.tx.ledger_entry_for_run(run.id))
    if run.phase is RunPhase.PREPARED:
        mutating = {"phase": RunPhase.MUTATING, "updated_at": w.now}
        run = w.update_run(run, run.model_copy(update=mutating))
    return w.insert_entry(
        LedgerEntry(
            id=rules.new_id("mut"),
            run_id=run.id,
            workflow=run.workflow,
            handler=run.handler,
            connector=connector,
            operation=operation,
            params=params,
            idempotency_key=idempotency_key,
            ui_title=ui_title,
            created_at=w.now,
            updated_at=w.now,
        )
    )
