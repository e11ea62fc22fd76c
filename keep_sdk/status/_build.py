"""`build_status`: the store read into a `StatusReport`."""

from __future__ import annotations

import datetime as dt

from keep_sdk.model import Event, HandlerKind, LedgerEntry
from keep_sdk.runtime import ledger_decision
from keep_sdk.status._reader import Reader
from keep_sdk.status._report import Input, Output, StatusReport, WorkflowStatus
from keep_sdk.status._waiting import Reconcilable, waiting
from keep_sdk.stores import Store, redacted_url

__all__ = ["build_status"]


def build_status(
    store: Store,
    *,
    store_url: str,
    now: dt.datetime,
    workflow: str | None = None,
    limit: int = 10,
    reconcilable: Reconcilable | None = None,
) -> StatusReport:
    """Read the store into a report; `limit` bounds the inputs and outputs listed per workflow.

    What a person can do about each waiting item is data (`Remedy`: a kind, the
    workflow and run, a permission, choice or correlation key), never a command:
    the command line spells it for `store_url`, the console renders buttons.
    Resolving with ``retry`` is offered for an escalated mutation only when
    `reconcilable` says its operation can reconcile (without `reconcilable`, never).

    The report does not read history: counts come from the store's indexes
    (`SupportsCounts`), inputs and outputs from the newest pages (`SupportsPages`),
    and what waits from the unfinished runs and each handler's latest run, all in one
    snapshot. A store without those capabilities is read in full.
    """
    can_reconcile = reconcilable or (lambda _connector, _operation: False)
    with store.reading():
        records = [store.get_workflow(workflow)] if workflow else store.list_workflows()
        reader = Reader(store, workflow)
        statuses = []
        for record in records:
            lease = reader.leases.get(record.name)
            live = lease is not None and not lease.expired(now)
            waiting_runs, entries = reader.waiting(record.name)
            statuses.append(
                WorkflowStatus(
                    name=record.name,
                    version=record.version,
                    paused=record.paused,
                    grants=record.grants,
                    worker=lease.owner if lease is not None and live else None,
                    inputs=[_input(e) for e in reader.inputs(record.name, limit)],
                    outputs=[_output(entry) for entry in reader.outputs(record.name, limit)],
                    waiting=waiting(
                        store, record.name, record.paused, waiting_runs, entries, can_reconcile
                    ),
                    events=reader.counts.events.get(record.name, {}),
                    runs=reader.counts.runs.get(record.name, {}),
                    next_runs={
                        h.name: h.next_run_at
                        for h in reader.handlers
                        if h.workflow == record.name
                        and h.kind is HandlerKind.PRODUCER
                        and h.next_run_at is not None
                        and h.version == record.version
                    },
                )
            )
    return StatusReport(store=redacted_url(store_url), workflows=statuses)


def _input(event: Event) -> Input:
    return Input(
        title=event.title,
        topic=event.topic,
        status=event.status.value,
        event_id=event.id,
        at=event.created_at,
    )


def _output(entry: LedgerEntry) -> Output:
    return Output(
        title=entry.ui_title or f"ctx.{entry.connector}.{entry.operation}",
        operation=f"{entry.connector}.{entry.operation}",
        status=entry.status.value,
        result=entry.result,
        error=entry.error,
        decision=ledger_decision(entry),
        run_id=entry.run_id,
        at=entry.updated_at,
    )
