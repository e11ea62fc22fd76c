"""Commit points of durable operations: intent with invocation, start answers, the inbox.

Each method is one transaction over the backend's `Transaction`, which must
also implement `DurableRows`. Run and ledger changes reach the listeners like
every other commit point's.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from typing import Any, cast

from pydantic import JsonValue

from keep_sdk.contract.durable import (
    Attempt,
    AttemptKind,
    Done,
    DurableAnswer,
    Invocation,
    InvocationStatus,
    Notification,
    NotificationOutcome,
)
from keep_sdk.errors import (
    ConfigurationError,
    MutationConflict,
    NotFound,
    RunNotActive,
    StoreConflict,
)
from keep_sdk.model import (
    LedgerEntry,
    LedgerStatus,
    MutationSkipped,
    RunPhase,
    RunRecord,
    RunStatus,
)
from keep_sdk.stores import _rules as rules
from keep_sdk.stores._commit._core import StoreCore
from keep_sdk.stores._commit._ledger import insert_intent
from keep_sdk.stores._commit.work import Work, require_entry, require_run
from keep_sdk.stores._durable import DurableRows, PersonSettlement
from keep_sdk.stores._transaction import Transaction
from keep_sdk.stores.faults import FaultPoint

__all__ = ["DurablePoints"]


def _rows(tx: Transaction) -> DurableRows:
    for name in ("invocation", "insert_notification", "append_attempt"):
        if not hasattr(tx, name):
            raise ConfigurationError(
                f"this store's transactions ({type(tx).__name__}) do not keep durable "
                "invocations; implement keep_sdk.stores.DurableRows to run durable operations"
            )
    return cast(DurableRows, tx)


def _maybe_rows(tx: Transaction) -> DurableRows | None:
    """The durable rows of `tx`, or None for a backend that keeps none (it has no
    durable invocations, so the scans find nothing)."""
    try:
        return _rows(tx)
    except ConfigurationError:
        return None


def _require_invocation(rows: DurableRows, invocation_id: str) -> Invocation:
    found = rows.invocation(invocation_id)
    if found is None:
        raise NotFound(f"no durable invocation {invocation_id!r}")
    return found


def _update(rows: DurableRows, before: Invocation, after: Invocation) -> Invocation:
    if not rows.update_invocation(before, after):
        raise StoreConflict(
            f"invocation {before.id} changed while this commit point ran; read it again"
        )
    return after


def _attempt(
    rows: DurableRows,
    w: Work,
    invocation: Invocation,
    kind: AttemptKind,
    outcome: str,
    detail: JsonValue,
) -> None:
    rows.append_attempt(
        Attempt(
            seq=1, invocation_id=invocation.id, kind=kind, outcome=outcome, detail=detail, at=w.now
        )
    )


class DurablePoints(StoreCore):
    """The `SupportsDurable` commit points and queries."""

    def record_durable_intent(
        self,
        run_id: str,
        *,
        connector: str,
        operation: str,
        params: JsonValue,
        idempotency_key: str,
        invocation_id: str,
        correlation_key: str,
        timeout_at: dt.datetime | None,
        ui_title: str | None = None,
    ) -> tuple[LedgerEntry, Invocation]:
        with self._commit() as w:
            rows = _rows(w.tx)
            run = require_run(w.tx, run_id)
            entry = insert_intent(
                w,
                run,
                connector=connector,
                operation=operation,
                params=params,
                idempotency_key=idempotency_key,
                ui_title=ui_title,
            )
            if rows.invocation(invocation_id) or rows.invocation_by_key(correlation_key):
                raise MutationConflict(
                    f"durable invocation {invocation_id} exists already; a run chain starts "
                    "its durable operation once"
                )
            w.fault(FaultPoint.DURABLE_INTENT)
            invocation = Invocation(
                id=invocation_id,
                run_id=run.id,
                ledger_id=entry.id,
                workflow=run.workflow,
                handler=run.handler,
                connector=connector,
                operation=operation,
                correlation_key=correlation_key,
                timeout_at=timeout_at,
                created_at=w.now,
                updated_at=w.now,
            )
            rows.insert_invocation(invocation)
            return entry, invocation

    def record_start_answer(
        self,
        invocation_id: str,
        answer: DurableAnswer,
        *,
        kind: AttemptKind = AttemptKind.START,
        next_poll_at: dt.datetime | None = None,
        logs: Sequence[str] = (),
        claim_version: int | None = None,
    ) -> tuple[Invocation, RunRecord]:
        with self._commit() as w:
            rows = _rows(w.tx)
            invocation = _require_invocation(rows, invocation_id)
            if invocation.status is not InvocationStatus.ACTIVE:
                raise MutationConflict(
                    f"invocation {invocation.id} is {invocation.status.value}; a {kind.value} "
                    "answer for it changes nothing"
                )
            _check_claim(invocation, claim_version)
            run = require_run(w.tx, invocation.run_id)
            entry = require_entry(w.tx, invocation.ledger_id)
            detail = answer.model_dump(mode="json", by_alias=True)
            common: dict[str, Any] = {
                "started": True,
                "updated_at": w.now,
                "external_id": answer.external_id or invocation.external_id,
                "polls": invocation.polls + (1 if kind is AttemptKind.POLL else 0),
                "claim_owner": None,
                "claim_until": None,
            }
            if isinstance(answer, Done):
                _attempt(rows, w, invocation, kind, "done" if answer.ok else "error", detail)
                status = InvocationStatus.COMPLETED if answer.ok else InvocationStatus.FAILED
                invocation = _update(
                    rows,
                    invocation,
                    invocation.model_copy(
                        update={
                            **common,
                            "status": status,
                            "result": answer.result,
                            "error": answer.error,
                            "next_poll_at": None,
                        }
                    ),
                )
                run = _settle(w, run, entry, answer)
                return invocation, run
            _attempt(rows, w, invocation, kind, "pending", detail)
            invocation = _update(
                rows,
                invocation,
                invocation.model_copy(
                    update={
                        **common,
                        "token": answer.token if answer.token is not None else invocation.token,
                        "polling": answer.token is not None,
                        "next_poll_at": next_poll_at if answer.token is not None else None,
                        "parked_at": invocation.parked_at or w.now,
                    }
                ),
            )
            w.fault(FaultPoint.DURABLE_ANSWER)
            if run.status is RunStatus.ACTIVE:
                run = w.update_run(
                    run,
                    run.model_copy(
                        update={
                            "status": RunStatus.PAUSED_WAITING,
                            "error": None,
                            "failure": None,
                            "resume_at": None,
                            "logs": [*run.logs, *logs],
                            "updated_at": w.now,
                        }
                    ),
                )
            return invocation, run

    def receive_notification(
        self, correlation_key: str, result: JsonValue, *, source: str
    ) -> Notification:
        with self._commit() as w:
            rows = _rows(w.tx)
            invocation = rows.invocation_by_key(correlation_key)
            if invocation is None:
                raise NotFound(
                    f"no durable invocation has correlation key {correlation_key!r}; check the "
                    "key (`keep status` lists the runs that wait and their keys)"
                )
            outcome, detail, processed = NotificationOutcome.PENDING, None, None
            if invocation.status is InvocationStatus.COMPLETED:
                outcome, processed = NotificationOutcome.DUPLICATE, w.now
                detail = f"invocation {invocation.id} had already completed; nothing changed"
            elif invocation.status is not InvocationStatus.ACTIVE:
                outcome, processed = NotificationOutcome.IGNORED, w.now
                detail = f"invocation {invocation.id} is {invocation.status.value}; nothing changed"
            notification = Notification(
                id=rules.new_id("ntf"),
                correlation_key=correlation_key,
                invocation_id=invocation.id,
                workflow=invocation.workflow,
                result=result,
                source=source,
                outcome=outcome,
                detail=detail,
                received_at=w.now,
                processed_at=processed,
            )
            rows.insert_notification(notification)
            if outcome is not NotificationOutcome.PENDING:
                _attempt(rows, w, invocation, AttemptKind.NOTIFICATION, outcome.value, detail)
            return notification

    def apply_notification(self, notification_id: str) -> tuple[Notification, RunRecord]:
        with self._commit() as w:
            rows = _rows(w.tx)
            notification = rows.notification(notification_id)
            if notification is None:
                raise NotFound(f"no notification {notification_id!r}")
            if notification.outcome is not NotificationOutcome.PENDING:
                raise StoreConflict(
                    f"notification {notification.id} was processed already "
                    f"({notification.outcome.value})"
                )
            invocation = _require_invocation(rows, notification.invocation_id)
            run = require_run(w.tx, invocation.run_id)
            if invocation.status is not InvocationStatus.ACTIVE:
                outcome = (
                    NotificationOutcome.DUPLICATE
                    if invocation.status is InvocationStatus.COMPLETED
                    else NotificationOutcome.IGNORED
                )
                _close(rows, w, notification, outcome, f"invocation is {invocation.status.value}")
                return rows.notification(notification.id) or notification, run
            if run.status is not RunStatus.PAUSED_WAITING:
                raise StoreConflict(
                    f"run {run.id} is {run.status.value}, not parked yet; the notification "
                    "stays in the inbox until it is"
                )
            if w.tx.active_run(run.workflow) is not None:
                raise rules.active_run_exists(run.workflow, str(w.tx.active_run(run.workflow)))
            entry = require_entry(w.tx, invocation.ledger_id)
            _update(
                rows,
                invocation,
                invocation.model_copy(
                    update={
                        "status": InvocationStatus.COMPLETED,
                        "result": notification.result,
                        "next_poll_at": None,
                        "updated_at": w.now,
                    }
                ),
            )
            _attempt(
                rows,
                w,
                invocation,
                AttemptKind.NOTIFICATION,
                "applied",
                {"notification": notification.id},
            )
            w.fault(FaultPoint.APPLY_NOTIFICATION)
            run = _settle(w, run, entry, Done(ok=True, result=notification.result))
            applied = _close(rows, w, notification, NotificationOutcome.APPLIED, None)
            for other in rows.notifications(invocation.id):
                if other.id != notification.id and other.outcome is NotificationOutcome.PENDING:
                    _close(
                        rows,
                        w,
                        other,
                        NotificationOutcome.DUPLICATE,
                        f"notification {notification.id} completed the invocation first",
                    )
            return applied, run

    def claim_invocation(
        self, invocation_id: str, owner: str, *, until: dt.datetime
    ) -> Invocation | None:
        with self._commit() as w:
            rows = _rows(w.tx)
            invocation = _require_invocation(rows, invocation_id)
            if invocation.status is not InvocationStatus.ACTIVE:
                return None
            live = invocation.claim_until is not None and invocation.claim_until > w.now
            if live and invocation.claim_owner not in (None, owner):
                return None
            claimed = invocation.model_copy(
                update={
                    "claim_owner": owner,
                    "claim_until": until,
                    "claim_version": invocation.claim_version + 1,
                    "updated_at": w.now,
                }
            )
            if not rows.update_invocation(invocation, claimed):
                return None
            return claimed

    def end_invocation(
        self,
        invocation_id: str,
        status: InvocationStatus,
        *,
        actor: str,
        detail: str,
        kind: AttemptKind,
    ) -> Invocation:
        with self._commit() as w:
            rows = _rows(w.tx)
            invocation = _require_invocation(rows, invocation_id)
            if invocation.status is not InvocationStatus.ACTIVE:
                raise MutationConflict(
                    f"invocation {invocation.id} is {invocation.status.value}, not active"
                )
            ended = _update(
                rows,
                invocation,
                invocation.model_copy(
                    update={
                        "status": status,
                        "error": detail,
                        "next_poll_at": None,
                        "claim_owner": None,
                        "claim_until": None,
                        "updated_at": w.now,
                    }
                ),
            )
            _attempt(rows, w, invocation, kind, status.value, {"actor": actor, "detail": detail})
            return ended

    def extend_invocation(
        self, invocation_id: str, *, timeout_at: dt.datetime | None, actor: str
    ) -> Invocation:
        with self._commit() as w:
            rows = _rows(w.tx)
            invocation = _require_invocation(rows, invocation_id)
            if invocation.status not in (InvocationStatus.TIMED_OUT, InvocationStatus.ACTIVE):
                raise MutationConflict(
                    f"invocation {invocation.id} is {invocation.status.value}; only an active "
                    "or timed-out invocation gets a new deadline"
                )
            extended = _update(
                rows,
                invocation,
                invocation.model_copy(
                    update={
                        "status": InvocationStatus.ACTIVE,
                        "timeout_at": timeout_at,
                        "error": None,
                        "updated_at": w.now,
                    }
                ),
            )
            _attempt(
                rows,
                w,
                invocation,
                AttemptKind.ACTION,
                "extended",
                {"actor": actor, "timeoutAt": timeout_at.isoformat() if timeout_at else None},
            )
            run = require_run(w.tx, invocation.run_id)
            if run.status is RunStatus.PAUSED_TIMEOUT:
                w.update_run(
                    run,
                    run.model_copy(
                        update={
                            "status": RunStatus.PAUSED_WAITING,
                            "error": None,
                            "failure": None,
                            "updated_at": w.now,
                        }
                    ),
                )
            w.audit(
                actor=actor,
                action="durable:extend",
                target=invocation.id,
                workflow=invocation.workflow,
                detail={"run": run.id, "timeoutAt": timeout_at.isoformat() if timeout_at else None},
            )
            return extended

    def time_out_invocation(self, invocation_id: str) -> tuple[Invocation, RunRecord] | None:
        with self._commit() as w:
            rows = _rows(w.tx)
            invocation = _require_invocation(rows, invocation_id)
            if (
                invocation.status is not InvocationStatus.ACTIVE
                or invocation.timeout_at is None
                or invocation.timeout_at > w.now
            ):
                return None
            run = require_run(w.tx, invocation.run_id)
            if run.status is not RunStatus.PAUSED_WAITING:
                return None
            why = (
                f"no result from ctx.{invocation.connector}.{invocation.operation} by "
                f"{invocation.timeout_at:%Y-%m-%d %H:%M:%S} UTC (correlation key "
                f"{invocation.correlation_key})"
            )
            ended = _update(
                rows,
                invocation,
                invocation.model_copy(
                    update={
                        "status": InvocationStatus.TIMED_OUT,
                        "error": why,
                        "next_poll_at": None,
                        "claim_owner": None,
                        "claim_until": None,
                        "updated_at": w.now,
                    }
                ),
            )
            _attempt(rows, w, invocation, AttemptKind.TIMEOUT, "timed_out", why)
            run = w.update_run(
                run,
                run.model_copy(
                    update={"status": RunStatus.PAUSED_TIMEOUT, "error": why, "updated_at": w.now}
                ),
            )
            return ended, run

    def resolve_invocation(
        self,
        invocation_id: str,
        action: PersonSettlement,
        *,
        actor: str,
        result: JsonValue = None,
        detail: str | None = None,
    ) -> tuple[Invocation, RunRecord]:
        with self._commit() as w:
            rows = _rows(w.tx)
            invocation = _require_invocation(rows, invocation_id)
            if invocation.status not in (InvocationStatus.ACTIVE, InvocationStatus.TIMED_OUT):
                raise MutationConflict(
                    f"invocation {invocation.id} is {invocation.status.value}; only a waiting or "
                    "timed-out invocation can be cancelled, skipped or given a result"
                )
            run = require_run(w.tx, invocation.run_id)
            if run.status not in (
                RunStatus.PAUSED_WAITING,
                RunStatus.PAUSED_TIMEOUT,
                RunStatus.ACTIVE,
            ):
                raise RunNotActive(
                    f"run {run.id} is {run.status.value}; it no longer waits for "
                    f"ctx.{invocation.connector}.{invocation.operation}"
                )
            if run.status is not RunStatus.ACTIVE and w.tx.active_run(run.workflow) is not None:
                raise rules.active_run_exists(run.workflow, str(w.tx.active_run(run.workflow)))
            entry = require_entry(w.tx, invocation.ledger_id)
            if entry.status is not LedgerStatus.IN_FLIGHT:
                raise MutationConflict(f"ledger entry {entry.id} is {entry.status.value} already")
            status = {
                "cancel": InvocationStatus.CANCELLED,
                "skip": invocation.status
                if invocation.status is not InvocationStatus.ACTIVE
                else InvocationStatus.CANCELLED,
                "supply": InvocationStatus.COMPLETED,
            }[action]
            ended = _update(
                rows,
                invocation,
                invocation.model_copy(
                    update={
                        "status": status,
                        "result": result if action == "supply" else None,
                        "error": detail,
                        "next_poll_at": None,
                        "claim_owner": None,
                        "claim_until": None,
                        "updated_at": w.now,
                    }
                ),
            )
            supplied = action == "supply"
            w.update_entry(
                entry,
                entry.model_copy(
                    update={
                        "status": LedgerStatus.APPLIED if supplied else LedgerStatus.FAILED,
                        "result": result if supplied else None,
                        "error": None if supplied else detail,
                        "resolved_by": actor,
                        "resolved_at": w.now,
                        "updated_at": w.now,
                    }
                ),
            )
            changes: dict[str, Any] = (
                rules.applied_run_changes(run, result)
                if supplied
                else {"mutation_result": MutationSkipped(), "phase": RunPhase.EMITTING}
            )
            run = w.update_run(
                run,
                run.model_copy(
                    update={
                        **changes,
                        "status": RunStatus.ACTIVE,
                        "error": None,
                        "failure": None,
                        "updated_at": w.now,
                    }
                ),
            )
            _attempt(
                rows, w, invocation, AttemptKind.ACTION, action, {"actor": actor, "detail": detail}
            )
            for other in rows.notifications(invocation.id):
                if other.outcome is NotificationOutcome.PENDING:
                    _close(rows, w, other, NotificationOutcome.IGNORED, f"a person chose {action}")
            w.audit(
                actor=actor,
                action=f"durable:{action}",
                target=invocation.id,
                workflow=invocation.workflow,
                detail={"run": run.id, "detail": detail},
            )
            return ended, run

    def record_poll_failure(
        self,
        invocation_id: str,
        *,
        error: str,
        next_poll_at: dt.datetime,
        claim_version: int,
    ) -> Invocation:
        with self._commit() as w:
            rows = _rows(w.tx)
            invocation = _require_invocation(rows, invocation_id)
            if invocation.status is not InvocationStatus.ACTIVE:
                raise MutationConflict(f"invocation {invocation.id} is {invocation.status.value}")
            _check_claim(invocation, claim_version)
            _attempt(rows, w, invocation, AttemptKind.POLL, "error", error)
            return _update(
                rows,
                invocation,
                invocation.model_copy(
                    update={
                        "polls": invocation.polls + 1,
                        "next_poll_at": next_poll_at,
                        "claim_owner": None,
                        "claim_until": None,
                        "updated_at": w.now,
                    }
                ),
            )

    def record_attempt(
        self, invocation_id: str, kind: AttemptKind, outcome: str, detail: JsonValue = None
    ) -> Attempt:
        with self._commit() as w:
            rows = _rows(w.tx)
            invocation = _require_invocation(rows, invocation_id)
            return rows.append_attempt(
                Attempt(
                    seq=1,
                    invocation_id=invocation.id,
                    kind=kind,
                    outcome=outcome,
                    detail=detail,
                    at=w.now,
                )
            )

    # Queries

    def get_invocation(self, invocation_id: str) -> Invocation:
        with self._read() as tx:
            return _require_invocation(_rows(tx), invocation_id)

    def invocation_by_key(self, correlation_key: str) -> Invocation:
        with self._read() as tx:
            found = _rows(tx).invocation_by_key(correlation_key)
            if found is None:
                raise NotFound(f"no durable invocation has correlation key {correlation_key!r}")
            return found

    def invocation_for_run(self, run_id: str) -> Invocation | None:
        with self._read() as tx:
            rows = _maybe_rows(tx)
            return rows.invocation_for_run(run_id) if rows is not None else None

    def list_invocations(
        self, *, workflow: str | None = None, status: InvocationStatus | None = None
    ) -> list[Invocation]:
        with self._read() as tx:
            return [
                i
                for i in _rows(tx).invocations()
                if workflow in (None, i.workflow) and status in (None, i.status)
            ]

    def deliverable_notifications(self, limit: int = 100) -> list[Notification]:
        """Up to `limit` pending notifications whose run is parked, oldest first. Pending
        notifications that must wait (their run is not parked) do not use up the page: the
        scan goes on, doubling, until the page is full or no pending notification is left."""
        with self._read() as tx:
            rows = _maybe_rows(tx)
            if rows is None or limit <= 0:
                return []
            parked: dict[str, bool] = {}

            def deliverable(notification: Notification) -> bool:
                if notification.invocation_id not in parked:
                    invocation = rows.invocation(notification.invocation_id)
                    run = tx.run(invocation.run_id) if invocation else None
                    waiting = run is not None and run.status is RunStatus.PAUSED_WAITING
                    parked[notification.invocation_id] = waiting
                return parked[notification.invocation_id]

            scan = limit
            while True:
                pending = rows.pending_notifications(scan)
                found = [n for n in pending if deliverable(n)]
                if len(found) >= limit or len(pending) < scan:
                    return found[:limit]
                scan *= 2

    def due_polls(self, now: dt.datetime | None = None, limit: int = 100) -> list[Invocation]:
        with self._read() as tx:
            rows = _maybe_rows(tx)
            return rows.due_invocations(now or self._now(), limit) if rows is not None else []

    def expired_invocations(
        self, now: dt.datetime | None = None, limit: int = 100
    ) -> list[Invocation]:
        with self._read() as tx:
            rows = _maybe_rows(tx)
            return rows.expired_invocations(now or self._now(), limit) if rows is not None else []

    def list_notifications(self, invocation_id: str) -> list[Notification]:
        with self._read() as tx:
            return _rows(tx).notifications(invocation_id)

    def list_attempts(self, invocation_id: str) -> list[Attempt]:
        with self._read() as tx:
            return _rows(tx).attempts(invocation_id)


def _check_claim(invocation: Invocation, claim_version: int | None) -> None:
    """A poll answer counts only from the worker whose claim is still the newest."""
    if claim_version is not None and invocation.claim_version != claim_version:
        raise StoreConflict(
            f"the poll claim on invocation {invocation.id} was taken over (claim "
            f"{claim_version}, now {invocation.claim_version}); this answer is not integrated"
        )


def _close(
    rows: DurableRows,
    w: Work,
    notification: Notification,
    outcome: NotificationOutcome,
    detail: str | None,
) -> Notification:
    closed = notification.model_copy(
        update={"outcome": outcome, "detail": detail, "processed_at": w.now}
    )
    if not rows.update_notification(notification, closed):
        raise StoreConflict(f"notification {notification.id} was processed meanwhile")
    return closed


def _settle(w: Work, run: RunRecord, entry: LedgerEntry, answer: Done) -> RunRecord:
    """The ledger entry and run as a finished durable operation leaves them."""
    if entry.status is not LedgerStatus.IN_FLIGHT:
        raise MutationConflict(
            f"ledger entry {entry.id} is {entry.status.value}; its durable operation was "
            "settled already"
        )
    if not answer.ok:
        w.update_entry(
            entry,
            entry.model_copy(
                update={"status": LedgerStatus.FAILED, "error": answer.error, "updated_at": w.now}
            ),
        )
        return run
    w.update_entry(
        entry,
        entry.model_copy(
            update={"status": LedgerStatus.APPLIED, "result": answer.result, "updated_at": w.now}
        ),
    )
    changes = rules.applied_run_changes(run, answer.result)
    if run.status is RunStatus.PAUSED_WAITING:
        changes.update(status=RunStatus.ACTIVE, error=None, failure=None)
    return w.update_run(run, run.model_copy(update={**changes, "updated_at": w.now}))
