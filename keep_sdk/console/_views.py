"""What the console's pages and JSON API show, read from the store a page at a time.

Each view is a pydantic model (camelCase JSON, like the command line's ``--json``),
built from the store's keyset pages (`keep_sdk.stores.SupportsPages`; a store without
them is paged over its full lists).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Generic, TypeVar

from pydantic import BaseModel, ConfigDict, Field, JsonValue
from pydantic.alias_generators import to_camel

from keep_sdk.errors import NotFound
from keep_sdk.model import (
    Event,
    EventStatus,
    HandlerKind,
    LedgerEntry,
    LedgerStatus,
    RunPhase,
    RunRecord,
    RunStatus,
)
from keep_sdk.runtime import ledger_decision, resolve_choices, run_resolution
from keep_sdk.stores import Store, SupportsPages

__all__ = [
    "EventPage",
    "FlowPage",
    "FlowRow",
    "LedgerPage",
    "MutationView",
    "PhaseStep",
    "RunPage",
    "RunView",
    "View",
    "event_page",
    "flow_page",
    "ledger_page",
    "pager",
    "run_actions",
    "run_page",
    "run_view",
]

T = TypeVar("T")

_PHASES = (
    RunPhase.PREPARING,
    RunPhase.PREPARED,
    RunPhase.MUTATING,
    RunPhase.MUTATED,
    RunPhase.EMITTING,
    RunPhase.COMMITTED,
)


class View(BaseModel):
    """Base of the console's views: camelCase JSON, frozen, strict about unknown fields."""

    model_config = ConfigDict(
        alias_generator=to_camel, populate_by_name=True, frozen=True, extra="forbid"
    )


class Page(View, Generic[T]):
    """Rows newest first; `next` is the ``before`` cursor of the following page (None: last)."""

    items: list[T]
    next: str | None = None


class EventPage(Page[Event]):
    """A page of events (``keep events --json`` rows)."""


class RunPage(Page[RunRecord]):
    """A page of runs (``keep runs --json`` rows)."""


class LedgerPage(Page[LedgerEntry]):
    """A page of ledger entries (``keep ledger --json`` rows)."""


class MutationView(View):
    """The change a run made or tried to make: the script's words next to what the host saw."""

    ui_title: str | None = Field(description="The script's own words (ui.title); may mislead.")
    operation: str = Field(description="connector.operation the host observed being called.")
    params: JsonValue = Field(description="The call's parameters as the host observed them.")
    status: LedgerStatus
    decision: str | None = None
    error: str | None = None
    run_id: str


class FlowRow(View):
    """One event and what it led to: the run that took it, its mutation, the events it published."""

    event: Event
    from_consumer_run: bool = Field(
        description="Published by a consumer run on the way (a downstream event), not an input."
    )
    run: RunRecord | None = None
    mutation: MutationView | None = None
    downstream: list[Event] = Field(default_factory=list)


class FlowPage(Page[FlowRow]):
    """``/api/workflows/{name}/flow``: inputs → outputs, newest first."""


class PhaseStep(View):
    """One phase of the timeline: done, where the run is (current) or not reached (todo)."""

    phase: RunPhase
    state: str


class RunView(View):
    """One run: its record, phase timeline, mutation, events it published, allowed actions."""

    run: RunRecord
    resolution: str | None = Field(
        default=None, description="What a person decided that ended the run, if anything."
    )
    timeline: list[PhaseStep]
    mutation: MutationView | None = None
    reserved: list[Event] = Field(default_factory=list)
    published: list[Event] = Field(default_factory=list)
    actions: list[str] = Field(
        description="What a person may do now: grant, retry, happened, didnt-happen, skip."
    )


class _ListPager:
    """`SupportsPages` over a store's full lists (for stores without their own pages)."""

    def __init__(self, store: Store) -> None:
        self.store = store

    def page_events(
        self,
        workflow: str,
        *,
        topic: str | None = None,
        status: EventStatus | None = None,
        created_by: str | None = None,
        before: str | None = None,
        limit: int,
    ) -> list[Event]:
        rows = [
            e
            for e in self.store.list_events(workflow, topic=topic, status=status)
            if created_by is None or e.created_by == created_by or e.id == before
        ]
        return _slice(rows, before, limit)

    def page_runs(
        self,
        *,
        workflow: str | None = None,
        status: RunStatus | None = None,
        before: str | None = None,
        limit: int,
    ) -> list[RunRecord]:
        return _slice(self.store.list_runs(workflow=workflow, status=status), before, limit)

    def page_ledger(
        self,
        *,
        workflow: str | None = None,
        status: LedgerStatus | None = None,
        before: str | None = None,
        limit: int,
    ) -> list[LedgerEntry]:
        return _slice(self.store.list_ledger(workflow=workflow, status=status), before, limit)

    def runs_by_ids(self, run_ids: Sequence[str]) -> list[RunRecord]:
        found = []
        for run_id in dict.fromkeys(run_ids):
            try:
                found.append(self.store.get_run(run_id))
            except NotFound:
                continue
        return found

    def ledger_for_runs(self, run_ids: Sequence[str]) -> list[LedgerEntry]:
        found = (self.store.ledger_entry_for_run(r) for r in dict.fromkeys(run_ids))
        return [entry for entry in found if entry is not None]

    def events_published_by(self, workflow: str, run_ids: Sequence[str]) -> list[Event]:
        wanted = set(run_ids)
        return [e for e in self.store.list_events(workflow) if e.created_by in wanted]


R = TypeVar("R", Event, RunRecord, LedgerEntry)


def _slice(rows: Sequence[R], before: str | None, limit: int) -> list[R]:
    ids = [r.id for r in rows]
    end = len(rows)
    if before is not None:
        if before not in ids:
            raise NotFound(f"no row {before!r} to page from; start again from the first page")
        end = ids.index(before)
    return list(rows[max(0, end - limit) : end])[::-1]


def pager(store: Store) -> SupportsPages:
    """The store's own pages, or pages over its full lists."""
    return store if isinstance(store, SupportsPages) else _ListPager(store)


def _fetch(
    fetch: Callable[[str | None, int], list[R]], before: str | None, limit: int
) -> tuple[list[R], str | None]:
    rows = fetch(before, limit + 1)
    more = len(rows) > limit
    rows = rows[:limit]
    return rows, rows[-1].id if more and rows else None


def event_page(
    store: Store,
    workflow: str,
    *,
    topic: str | None = None,
    status: EventStatus | None = None,
    before: str | None = None,
    limit: int,
) -> EventPage:
    """A page of the workflow's events (`NotFound` for an unknown workflow or cursor)."""
    store.get_workflow(workflow)
    p = pager(store)
    rows, nxt = _fetch(
        lambda b, n: p.page_events(workflow, topic=topic, status=status, before=b, limit=n),
        before,
        limit,
    )
    return EventPage(items=rows, next=nxt)


def run_page(
    store: Store,
    *,
    workflow: str | None = None,
    status: RunStatus | None = None,
    before: str | None = None,
    limit: int,
) -> RunPage:
    """A page of runs, newest first."""
    if workflow is not None:
        store.get_workflow(workflow)
    p = pager(store)
    rows, nxt = _fetch(
        lambda b, n: p.page_runs(workflow=workflow, status=status, before=b, limit=n), before, limit
    )
    return RunPage(items=rows, next=nxt)


def ledger_page(
    store: Store,
    *,
    workflow: str | None = None,
    status: LedgerStatus | None = None,
    before: str | None = None,
    limit: int,
) -> LedgerPage:
    """A page of the mutation ledger, newest first."""
    if workflow is not None:
        store.get_workflow(workflow)
    p = pager(store)
    rows, nxt = _fetch(
        lambda b, n: p.page_ledger(workflow=workflow, status=status, before=b, limit=n),
        before,
        limit,
    )
    return LedgerPage(items=rows, next=nxt)


def _mutation(entry: LedgerEntry | None) -> MutationView | None:
    if entry is None:
        return None
    return MutationView(
        ui_title=entry.ui_title,
        operation=f"{entry.connector}.{entry.operation}",
        params=entry.params,
        status=entry.status,
        decision=ledger_decision(entry),
        error=entry.error,
        run_id=entry.run_id,
    )


def flow_page(store: Store, workflow: str, *, before: str | None = None, limit: int) -> FlowPage:
    """Inputs → outputs: each event of a page, the consumer run that took it, the mutation
    that run made (its ui.title next to the observed call) and the events it published."""
    events = event_page(store, workflow, before=before, limit=limit)
    p = pager(store)
    ids = [i for e in events.items for i in (e.created_by, e.reserved_by) if i is not None]
    runs = {r.id: r for r in p.runs_by_ids(ids)}
    takers = [r.id for r in runs.values() if r.kind is HandlerKind.CONSUMER]
    entries = {e.run_id: e for e in p.ledger_for_runs(takers)}
    published: dict[str, list[Event]] = {}
    for event in p.events_published_by(workflow, takers):
        published.setdefault(str(event.created_by), []).append(event)
    rows = []
    for event in events.items:
        creator = runs.get(event.created_by or "")
        taker = runs.get(event.reserved_by or "")
        rows.append(
            FlowRow(
                event=event,
                from_consumer_run=creator is not None and creator.kind is HandlerKind.CONSUMER,
                run=taker,
                mutation=_mutation(entries.get(taker.id)) if taker else None,
                downstream=published.get(taker.id, [])[:20] if taker else [],
            )
        )
    return FlowPage(items=rows, next=events.next)


def run_actions(run: RunRecord, entry: LedgerEntry | None, *, reconcilable: bool) -> list[str]:
    """The person's actions the run's state allows (the same `PersonActions` refuse others).

    ``grant`` for a run waiting for a permission; ``retry`` (ask again, only when the
    operation can reconcile), ``didnt-happen`` and ``skip`` for an escalated mutation;
    ``retry`` for a failed or crashed run; ``cancel`` for a run parked on a durable
    operation (waiting or timed out)."""
    if run.status is RunStatus.PAUSED_APPROVAL and run.waiting_permission:
        return ["grant"]
    if run.status in (RunStatus.PAUSED_WAITING, RunStatus.PAUSED_TIMEOUT):
        return ["cancel"]
    return [choice.value for choice in resolve_choices(run, entry, reconcilable=reconcilable)]


def _timeline(run: RunRecord) -> list[PhaseStep]:
    at = _PHASES.index(run.phase)
    done = run.status is RunStatus.COMMITTED
    return [
        PhaseStep(
            phase=phase,
            state="done" if i < at or (done and i == at) else "current" if i == at else "todo",
        )
        for i, phase in enumerate(_PHASES)
    ]


def run_view(store: Store, run_id: str, *, reconcilable: Callable[[str, str], bool]) -> RunView:
    """One run in full (`NotFound` for an unknown id)."""
    run = store.get_run(run_id)
    entry = store.ledger_entry_for_run(run.id)
    p = pager(store)
    reserved = []
    if run.prepare_result is not None:
        for reservation in run.prepare_result.reservations:
            reserved += store.events_by_ids(run.workflow, reservation.topic, reservation.ids)
    return RunView(
        run=run,
        resolution=run_resolution(run),
        timeline=_timeline(run),
        mutation=_mutation(entry),
        reserved=reserved,
        published=p.page_events(run.workflow, created_by=run.id, limit=100)[::-1],
        actions=run_actions(
            run,
            entry,
            reconcilable=entry is not None and reconcilable(entry.connector, entry.operation),
        ),
    )
