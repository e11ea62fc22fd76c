"""Commit points of workflows and handlers: deploy, a person's workflow changes, schedules."""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

from pydantic import JsonValue

from keep_sdk.errors import NotFound, StoreConflict
from keep_sdk.model import HandlerKind
from keep_sdk.stores._commit._core import StoreCore
from keep_sdk.stores._commit.work import Work, in_utc, require_handler, require_workflow
from keep_sdk.stores._models import HandlerRecord, HandlerSpec, WorkflowRecord, WorkflowVersion
from keep_sdk.stores.faults import FaultPoint

__all__ = ["WorkflowPoints", "update_handler"]

_T = TypeVar("_T")

_PERSON_FAULTS = {
    "pause": FaultPoint.PAUSE_WORKFLOW,
    "resume": FaultPoint.RESUME_WORKFLOW,
    "grant": FaultPoint.GRANT_WORKFLOW,
    "revoke": FaultPoint.REVOKE_WORKFLOW,
}


class WorkflowPoints(StoreCore):
    """deploy, deploy_if_changed, pause/resume, grant/revoke, set_next_run_at, set_wake_at."""

    def deploy(
        self,
        name: str,
        source: str,
        manifest: JsonValue,
        *,
        handlers: Sequence[HandlerSpec] = (),
    ) -> int:
        return self._deploying(
            name, lambda w, current: _deploy(w, name, source, manifest, handlers, current)
        )

    def deploy_if_changed(
        self,
        name: str,
        source: str,
        manifest: JsonValue,
        *,
        handlers: Sequence[HandlerSpec] = (),
    ) -> tuple[int, bool]:
        def attempt(w: Work, current: WorkflowRecord | None) -> tuple[int, bool]:
            if current is not None:
                stored = w.tx.version(name, current.version)
                if stored is not None and stored.source == source:
                    return current.version, False
            return _deploy(w, name, source, manifest, handlers, current), True

        return self._deploying(name, attempt)

    def _deploying(self, name: str, attempt: Callable[[Work, WorkflowRecord | None], _T]) -> _T:
        """`attempt` in one commit with workflow `name` read under its lock. Concurrent first
        deploys cannot lock a row that does not exist yet: the one that loses the race to
        create it (a `StoreConflict`) runs again, now behind the winner's lock."""
        for again in (False, True):
            try:
                with self._commit() as w:
                    return attempt(w, w.tx.workflow(name, lock=True))
            except StoreConflict:
                if again:
                    raise
        raise AssertionError("unreachable")

    def pause_workflow(self, name: str, *, actor: str, reason: str | None = None) -> WorkflowRecord:
        return self._person_change(
            name, "pause", actor, {"reason": reason}, lambda wf: {"paused": True}
        )

    def resume_workflow(self, name: str, *, actor: str) -> WorkflowRecord:
        return self._person_change(name, "resume", actor, None, lambda wf: {"paused": False})

    def grant_permission(self, name: str, permission: str, *, actor: str) -> WorkflowRecord:
        return self._person_change(
            name,
            "grant",
            actor,
            {"permission": permission},
            lambda wf: {"grants": sorted({*wf.grants, permission})},
        )

    def revoke_permission(self, name: str, permission: str, *, actor: str) -> WorkflowRecord:
        def revoked(wf: WorkflowRecord) -> dict[str, Any]:
            if permission not in wf.grants:
                raise NotFound(f"workflow {name!r} was never granted {permission!r}")
            return {"grants": [g for g in wf.grants if g != permission]}

        return self._person_change(name, "revoke", actor, {"permission": permission}, revoked)

    def _person_change(
        self,
        name: str,
        action: str,
        actor: str,
        detail: JsonValue,
        change: Callable[[WorkflowRecord], dict[str, Any]],
    ) -> WorkflowRecord:
        """Apply a person's `action` to the workflow and audit it."""
        with self._commit() as w:
            wf = require_workflow(w.tx, name, lock=True)
            updated = wf.model_copy(update={**change(wf), "updated_at": w.now})
            w.tx.update_workflow(wf, updated)
            w.fault(_PERSON_FAULTS[action])
            w.audit(actor=actor, action=action, target=name, workflow=name, detail=detail)
            return updated

    def set_next_run_at(
        self, workflow: str, handler: str, next_run_at: dt.datetime | None
    ) -> HandlerRecord:
        return self._update_handler(workflow, handler, next_run_at=in_utc(next_run_at))

    def set_wake_at(
        self, workflow: str, handler: str, wake_at: dt.datetime | None
    ) -> HandlerRecord:
        return self._update_handler(workflow, handler, wake_at=in_utc(wake_at))

    def _update_handler(self, workflow: str, handler: str, **changes: Any) -> HandlerRecord:
        with self._commit() as w:
            return update_handler(w, require_handler(w.tx, workflow, handler), **changes)


def update_handler(w: Work, record: HandlerRecord, **changes: Any) -> HandlerRecord:
    """Write `changes` to the handler read as `record`, stamped `now`."""
    updated = record.model_copy(update={**changes, "updated_at": w.now})
    w.tx.update_handler(record, updated)
    return updated


def _deploy(
    w: Work,
    name: str,
    source: str,
    manifest: JsonValue,
    handlers: Sequence[HandlerSpec],
    current: WorkflowRecord | None,
) -> int:
    """Store `source` as the next version of `name` (locked as `current`) and make it
    current; return its number."""
    now = w.now
    version = current.version + 1 if current else 1
    if current is None:
        w.tx.insert_workflow(
            WorkflowRecord(name=name, version=version, created_at=now, updated_at=now)
        )
    w.tx.insert_version(
        WorkflowVersion(
            workflow=name,
            version=version,
            source=source,
            manifest=manifest,
            handlers=list(handlers),
            created_at=now,
        )
    )
    w.fault(FaultPoint.DEPLOY_VERSION)
    for spec in handlers:
        _declare(w, name, version, spec)
    w.fault(FaultPoint.DEPLOY_HANDLERS)
    if current is not None:
        w.tx.update_workflow(
            current, current.model_copy(update={"version": version, "updated_at": now})
        )
    return version


def _declare(w: Work, workflow: str, version: int, spec: HandlerSpec) -> None:
    """Make the handler part of `version`; a producer becomes due now. State and wakeAt stay."""
    declared = {
        "kind": spec.kind,
        "version": version,
        "subscribe": sorted(set(spec.subscribe)),
        "next_run_at": w.now if spec.kind is HandlerKind.PRODUCER else None,
        "updated_at": w.now,
    }
    old = w.tx.handler(workflow, spec.name)
    if old is None:
        w.tx.insert_handler(HandlerRecord(workflow=workflow, name=spec.name, **declared))
    else:
        w.tx.update_handler(old, old.model_copy(update=declared))
