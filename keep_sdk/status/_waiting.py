"""What waits in one workflow, why, and what a person can do about each (`Remedy`)."""

from __future__ import annotations

from collections.abc import Callable

from keep_sdk.model import LedgerEntry, LedgerStatus, RunRecord, RunStatus
from keep_sdk.runtime import ResolveChoice, resolve_choices, run_resolution
from keep_sdk.status._report import Remedy, RemedyKind, Waiting
from keep_sdk.stores import Store, SupportsDurable

__all__ = ["Reconcilable", "waiting"]

Reconcilable = Callable[[str, str], bool]
"""Whether ``connector.operation`` can reconcile (so resolving with ``retry`` can ask again)."""

_TIMED_OUT = (
    RemedyKind.EXTEND,
    RemedyKind.START_AGAIN,
    RemedyKind.SUPPLY,
    RemedyKind.SKIP_WAIT,
    RemedyKind.CANCEL,
)


def _subject(run: RunRecord, entry: LedgerEntry | None) -> str:
    if entry is not None and entry.ui_title:
        return entry.ui_title
    if run.prepare_result is not None and run.prepare_result.ui and run.prepare_result.ui.title:
        return run.prepare_result.ui.title
    return f"{run.handler} ({run.kind.value} run {run.id})"


def _resolutions(
    run: RunRecord, entry: LedgerEntry | None, reconcilable: Reconcilable
) -> list[Remedy]:
    can = entry is not None and reconcilable(entry.connector, entry.operation)
    return [
        Remedy(kind=RemedyKind.RESOLVE, workflow=run.workflow, run_id=run.id, choice=choice)
        for choice in resolve_choices(run, entry, reconcilable=can)
    ]


def waiting(
    store: Store,
    workflow: str,
    paused: bool,
    runs: list[RunRecord],
    entries: dict[str, LedgerEntry],
    reconcilable: Reconcilable,
) -> list[Waiting]:
    """The workflow (when paused) and each of its `runs` that waits, oldest first."""
    found = []
    if paused:
        found.append(
            Waiting(
                subject=f"workflow {workflow}",
                why="a person paused it; no run starts until it is resumed",
                needs_person=True,
                remedies=[Remedy(kind=RemedyKind.RESUME, workflow=workflow)],
            )
        )
    for run in runs:
        item = _run(store, run, entries.get(run.id), reconcilable)
        if item is not None:
            found.append(item)
    return found


def _run(
    store: Store, run: RunRecord, entry: LedgerEntry | None, reconcilable: Reconcilable
) -> Waiting | None:
    subject = _subject(run, entry)
    match run.status:
        case RunStatus.PAUSED_APPROVAL:
            permission = run.waiting_permission
            return Waiting(
                subject=subject,
                why=run.error or "waits for a permission",
                needs_person=True,
                remedies=[
                    Remedy(
                        kind=RemedyKind.GRANT,
                        workflow=run.workflow,
                        run_id=run.id,
                        permission=permission,
                    )
                ]
                if permission
                else [],
                run_id=run.id,
            )
        case RunStatus.PAUSED_RECONCILIATION if (
            entry is not None and entry.status is LedgerStatus.NEEDS_RECONCILE
        ):
            return Waiting(
                subject=subject,
                why=f"not known yet whether it happened; checking again at "
                f"{entry.next_reconcile_at:%Y-%m-%d %H:%M:%S} UTC"
                if entry.next_reconcile_at
                else "not known yet whether it happened",
                needs_person=False,
                run_id=run.id,
            )
        case RunStatus.PAUSED_RECONCILIATION:
            return Waiting(
                subject=subject,
                why=f"nobody can tell whether it happened: {run.error}",
                needs_person=True,
                remedies=_resolutions(run, entry, reconcilable),
                run_id=run.id,
            )
        case RunStatus.PAUSED_WAITING:
            return _parked(store, run, subject)
        case RunStatus.PAUSED_TIMEOUT:
            return Waiting(
                subject=subject,
                why=f"timed out: {run.error}",
                needs_person=True,
                remedies=[
                    Remedy(kind=kind, workflow=run.workflow, run_id=run.id) for kind in _TIMED_OUT
                ],
                run_id=run.id,
            )
        case RunStatus.PAUSED_TRANSIENT:
            when = f" at {run.resume_at:%Y-%m-%d %H:%M:%S} UTC" if run.resume_at else ""
            return Waiting(
                subject=subject,
                why=f"will try again{when} after a temporary failure: {run.error}",
                needs_person=False,
                run_id=run.id,
            )
        case RunStatus.FAILED_LOGIC | RunStatus.FAILED_INTERNAL if run_resolution(run) is None:
            return Waiting(
                subject=subject,
                why=f"{run.status.value}: {run.error}",
                needs_person=True,
                remedies=[
                    Remedy(kind=RemedyKind.DEPLOY, workflow=run.workflow),
                    Remedy(
                        kind=RemedyKind.RESOLVE,
                        workflow=run.workflow,
                        run_id=run.id,
                        choice=ResolveChoice.RETRY,
                    ),
                ],
                run_id=run.id,
            )
        case _:
            return None


def _parked(store: Store, run: RunRecord, subject: str) -> Waiting:
    """A parked run: what it waits for, until when, and how to deliver the result."""
    invocation = store.invocation_for_run(run.id) if isinstance(store, SupportsDurable) else None
    if invocation is None:
        return Waiting(
            subject=subject,
            why="waits for its durable operation",
            needs_person=False,
            run_id=run.id,
        )
    until = (
        f" until {invocation.timeout_at:%Y-%m-%d %H:%M:%S} UTC"
        if invocation.timeout_at is not None
        else ""
    )
    how = "polled" if invocation.polling else "notified"
    return Waiting(
        subject=subject,
        why=f"waits for ctx.{invocation.connector}.{invocation.operation} to be {how}{until} "
        f"(correlation key {invocation.correlation_key})",
        needs_person=False,
        remedies=[
            Remedy(
                kind=RemedyKind.NOTIFY,
                workflow=run.workflow,
                run_id=run.id,
                correlation_key=invocation.correlation_key,
            ),
            Remedy(kind=RemedyKind.CANCEL, workflow=run.workflow, run_id=run.id),
        ],
        run_id=run.id,
    )
