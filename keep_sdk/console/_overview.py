"""The front page: every workflow with what waits for a person, read from the newest rows.

`build_status` (``keep status``) reads every event, run and ledger entry; the
front page reads only the newest runs of each waiting kind and the newest row of
each list, so its cost does not grow with a workflow's history.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable

from keep_sdk.console._views import View, pager, run_actions
from keep_sdk.model import LedgerEntry, LedgerStatus, RunRecord, RunStatus, UtcDatetime
from keep_sdk.stores import Store, SupportsDurable

__all__ = ["Overview", "WaitingItem", "WorkflowSummary", "overview"]

_RETRYABLE = (RunStatus.FAILED_LOGIC, RunStatus.FAILED_INTERNAL, RunStatus.CRASHED)


class WaitingItem(View):
    """A run that waits: for a person (`needs_person`) or for time."""

    subject: str
    why: str
    needs_person: bool
    run_id: str
    status: RunStatus
    workflow: str
    waiting_permission: str | None = None
    actions: list[str] = []
    """What a person may do about it right here (`run_actions`: grant, retry, happened,
    didnt-happen, skip, cancel), rendered as the same buttons as on the run's page."""


class WorkflowSummary(View):
    """One workflow on the front page: read from the newest rows only, so its cost does not
    grow with the workflow's history."""

    name: str
    version: int
    paused: bool
    grants: list[str]
    worker: str | None = None
    waiting: list[WaitingItem]
    last_activity: UtcDatetime | None = None


class Overview(View):
    """The front page: every workflow."""

    workflows: list[WorkflowSummary]


_WAITS = (
    RunStatus.PAUSED_APPROVAL,
    RunStatus.PAUSED_RECONCILIATION,
    RunStatus.PAUSED_TRANSIENT,
    RunStatus.PAUSED_WAITING,
    RunStatus.PAUSED_TIMEOUT,
    *_RETRYABLE,
)
_RECENT_RUNS = 200
_WAITING_PER_STATUS = 20


def _subject(run: RunRecord, entry: LedgerEntry | None) -> str:
    if entry is not None and entry.ui_title:
        return entry.ui_title
    if run.prepare_result is not None and run.prepare_result.ui and run.prepare_result.ui.title:
        return run.prepare_result.ui.title
    return f"{run.handler} ({run.kind.value} run)"


def _why(run: RunRecord, entry: LedgerEntry | None) -> tuple[str, bool]:
    match run.status:
        case RunStatus.PAUSED_APPROVAL:
            return run.error or f"waits for the permission {run.waiting_permission}", True
        case RunStatus.PAUSED_RECONCILIATION if (
            entry is not None and entry.status is LedgerStatus.NEEDS_RECONCILE
        ):
            return "not known yet whether it happened; the host asks again by itself", False
        case RunStatus.PAUSED_RECONCILIATION:
            return f"nobody can tell whether it happened: {run.error}", True
        case RunStatus.PAUSED_TRANSIENT:
            return f"will try again after a temporary failure: {run.error}", False
        case RunStatus.PAUSED_WAITING:
            return run.error or "waits for a durable operation to finish", False
        case RunStatus.PAUSED_TIMEOUT:
            return f"its durable operation timed out: {run.error}", True
        case _:
            return f"{run.status.value}: {run.error}", True


def _parked(store: SupportsDurable, run: RunRecord) -> str | None:
    """What a parked run waits for, and until when, from its invocation record."""
    invocation = store.invocation_for_run(run.id)
    if invocation is None:
        return None
    until = f" until {invocation.timeout_at:%Y-%m-%d %H:%M} UTC" if invocation.timeout_at else ""
    return (
        f"waits for ctx.{invocation.connector}.{invocation.operation}{until} "
        f"(correlation key {invocation.correlation_key})"
    )


def _superseded(failed: RunRecord, newer: list[RunRecord]) -> bool:
    return any(r.retry_of == failed.id or r.handler == failed.handler for r in newer)


def _never(connector: str, operation: str) -> bool:
    return False


def overview(
    store: Store,
    *,
    now: dt.datetime,
    reconcilable: Callable[[str, str], bool] = _never,
) -> Overview:
    """Every workflow with what waits (the newest waiting runs of each kind; a failed run a
    later run of its handler superseded is left out, as in ``keep status``) and when it last
    did anything."""
    p = pager(store)
    summaries = []
    for record in store.list_workflows():
        recent = p.page_runs(workflow=record.name, limit=_RECENT_RUNS)
        blocked = [
            run
            for status in _WAITS
            for run in p.page_runs(workflow=record.name, status=status, limit=_WAITING_PER_STATUS)
            if status not in _RETRYABLE
            or not _superseded(run, [r for r in recent if r.created_at > run.created_at])
        ]
        entries = {e.run_id: e for e in p.ledger_for_runs([r.id for r in blocked])}
        waiting = []
        for run in blocked:
            entry = entries.get(run.id)
            why, needs_person = _why(run, entry)
            if run.status is RunStatus.PAUSED_WAITING and isinstance(store, SupportsDurable):
                why = _parked(store, run) or why
            waiting.append(
                WaitingItem(
                    subject=_subject(run, entry),
                    why=why,
                    needs_person=needs_person,
                    run_id=run.id,
                    status=run.status,
                    workflow=run.workflow,
                    waiting_permission=run.waiting_permission,
                    actions=run_actions(
                        run,
                        entry,
                        reconcilable=entry is not None
                        and reconcilable(entry.connector, entry.operation),
                    ),
                )
            )
        newest = [
            *(e.created_at for e in p.page_events(record.name, limit=1)),
            *(r.updated_at for r in recent[:1]),
            *(e.updated_at for e in p.page_ledger(workflow=record.name, limit=1)),
        ]
        lease = store.get_lease(record.name)
        summaries.append(
            WorkflowSummary(
                name=record.name,
                version=record.version,
                paused=record.paused,
                grants=record.grants,
                worker=lease.owner if lease is not None and not lease.expired(now) else None,
                waiting=waiting,
                last_activity=max(newest) if newest else None,
            )
        )
    return Overview(workflows=summaries)
