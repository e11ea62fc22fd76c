"""Checking an `Expectation` against what a world's store and doubles hold."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Sequence
from typing import Any

from pydantic import BaseModel, JsonValue

from keep_sdk.cases._model import (
    Expectation,
    ExpectedMutation,
    ExpectedPublish,
    ExpectedWait,
)
from keep_sdk.cases._result import Mismatch, diff, is_subset, narrow
from keep_sdk.cases._world import World
from keep_sdk.errors import KeepError
from keep_sdk.model import LedgerStatus, RunRecord, RunStatus
from keep_sdk.stores import Store, SupportsDurable

__all__ = ["check", "mutations", "publishes", "run_counts", "waiting"]

_DONE = (RunStatus.COMMITTED, RunStatus.ACTIVE)


def mutations(world: World) -> list[JsonValue]:
    """Every mutation the workflow's runs asked for, in order."""
    return [
        {
            "call": f"{entry.connector}.{entry.operation}",
            "arguments": entry.params,
            "status": entry.status.value,
        }
        for entry in world.installation.store.list_ledger(workflow=world.workflow)
    ]


def publishes(world: World) -> list[JsonValue]:
    """Every event a run of the workflow published, in order."""
    return [
        {
            "topic": event.topic,
            "messageId": event.message_id,
            "title": event.title,
            "payload": event.payload,
        }
        for event in world.installation.store.list_events(world.workflow)
        if event.created_by is not None
    ]


def run_counts(world: World) -> dict[str, int]:
    """The workflow's runs by status."""
    runs = world.installation.store.list_runs(workflow=world.workflow)
    return dict(Counter(r.status.value for r in runs))


def waiting(world: World) -> list[JsonValue]:
    """The runs that wait (paused, failed or crashed), oldest first: handler, status and
    the ``connector.operation`` they wait on (None when they called none)."""
    store = world.installation.store
    runs = [r for r in store.list_runs(workflow=world.workflow) if r.status not in _DONE]
    calls = {
        e.run_id: f"{e.connector}.{e.operation}" for e in store.list_ledger(workflow=world.workflow)
    }
    found: list[JsonValue] = []
    for run in sorted(runs, key=lambda r: (r.created_at, r.id)):
        operation = calls.get(run.id)
        if isinstance(store, SupportsDurable):
            invocation = store.invocation_for_run(run.id)
            if invocation is not None:
                operation = f"{invocation.connector}.{invocation.operation}"
        found.append({"handler": run.handler, "status": run.status.value, "operation": operation})
    return found


def _dumped(items: Sequence[BaseModel]) -> list[Any]:
    return [e.model_dump(mode="json", by_alias=True, exclude_none=True) for e in items]


def _list(
    where: str,
    what: str,
    expected: Sequence[BaseModel],
    actual: list[JsonValue],
    matches: Callable[[Any, Any], bool],
) -> list[Mismatch]:
    if len(expected) == len(actual) and all(
        matches(e, a) for e, a in zip(expected, actual, strict=True)
    ):
        return []
    wanted = _dumped(expected)
    shown = [narrow(e, a) for e, a in zip(wanted, actual, strict=False)] + actual[len(wanted) :]
    return [
        Mismatch(
            what=what,
            expected=wanted,
            actual=actual,
            diff=diff(wanted, shown),
            where=where,
            summary=f"{what}: expected {wanted!r}, found {shown!r}",
        )
    ]


def _mutation(expected: ExpectedMutation, actual: Any) -> bool:
    return (
        expected.call == actual["call"]
        and (expected.arguments is None or is_subset(expected.arguments, actual["arguments"]))
        and (expected.status is None or expected.status == actual["status"])
    )


def _publish(expected: ExpectedPublish, actual: Any) -> bool:
    return (
        expected.topic == actual["topic"]
        and (expected.message_id is None or expected.message_id == actual["messageId"])
        and (expected.title is None or expected.title == actual["title"])
        and (expected.payload is None or is_subset(expected.payload, actual["payload"]))
    )


def _wait(expected: ExpectedWait, actual: Any) -> bool:
    return is_subset(expected.model_dump(exclude_none=True), actual)


def check(world: World, expect: Expectation, where: str) -> list[Mismatch]:
    """Every expectation of `expect` that does not hold, then every invariant broken."""
    store, workflow = world.installation.store, world.workflow
    found: list[Mismatch] = []

    def compare(what: str, actual: Any, wanted: Any) -> None:
        if actual != wanted:
            found.append(Mismatch.compare(where, what, wanted, actual))

    if expect.mutations is not None:
        found += _list(where, "mutations", expect.mutations, mutations(world), _mutation)
    if expect.publishes is not None:
        found += _list(where, "publishes", expect.publishes, publishes(world), _publish)
    if expect.events is not None:
        for topic, wanted_events in expect.events.items():
            events: dict[str, str] = {
                e.message_id: e.status.value for e in store.list_events(workflow, topic=topic)
            }
            compare(f"events.{topic}", events, wanted_events)
    if expect.runs is not None:
        counts = run_counts(world)
        compare("runs", {s: counts.get(s, 0) for s in expect.runs}, expect.runs)
    if expect.waiting is not None:
        found += _list(where, "waiting", expect.waiting, waiting(world), _wait)
    if expect.ledger is not None:
        compare(
            "ledger", [e.status.value for e in store.list_ledger(workflow=workflow)], expect.ledger
        )
    if expect.effects is not None:
        effects = {}
        for name in expect.effects:
            connector, _, operation = name.partition(".")
            effects[name] = len(world.effects(connector, operation))
        compare("effects", effects, expect.effects)
    if expect.rows is not None:
        sheets = world.double("sheets").snapshot()["spreadsheets"]
        rows = {
            sid: [r["values"] for r in sheets.get(sid, {}).get("rows", [])] for sid in expect.rows
        }
        compare("rows", rows, expect.rows)
    if expect.messages is not None:
        channels = world.double("slack").snapshot()["channels"]
        texts = {c: [m["text"] for m in channels.get(c, [])] for c in expect.messages}
        compare("messages", texts, expect.messages)
    for handler, state in (expect.state or {}).items():
        try:
            record = store.get_handler(workflow, handler)
        except KeepError:
            found.append(Mismatch.note(where, f"state.{handler}: the workflow has no such handler"))
            continue
        compare(f"state.{handler}", record.state if record.has_state else None, state)
    if expect.audit is not None:
        compare(
            "audit",
            [
                a.action
                for a in store.audit_log(workflow=workflow)
                if a.actor == world.harness.actor
            ],
            expect.audit,
        )
    if expect.escalations is not None:
        compare("escalations", world.escalated, expect.escalations)
    if expect.mutation_results is not None:
        runs = store.list_runs(workflow=workflow)
        for handler, statuses in expect.mutation_results.items():
            seen = [
                r.mutation_result.status if r.mutation_result else "none"
                for r in runs
                if r.handler == handler and r.status is RunStatus.COMMITTED
            ]
            compare(f"mutation_results.{handler}", seen, statuses)
    return found + _invariants(world, where)


def _invariants(world: World, where: str) -> list[Mismatch]:
    """What must hold after every step, whatever the case says."""
    found: list[Mismatch] = []
    store = world.installation.store
    seen: dict[str, str] = {}
    for entry in store.list_ledger(workflow=world.workflow):
        if entry.status is not LedgerStatus.APPLIED:
            continue
        root = _root(store, entry.run_id)
        if root in seen:
            found.append(
                Mismatch.note(
                    where,
                    f"runs {seen[root]} and {entry.run_id} of one chain both applied a mutation",
                )
            )
        seen[root] = entry.run_id
    for name, effects in world.recorded().items():
        keys = Counter(e["idempotencyKey"] for e in effects)
        twice = [k for k, n in keys.items() if n > 1]
        if twice:
            found.append(Mismatch.note(where, f"{name} applied one idempotency key twice: {twice}"))
    return found


def _root(store: Store, run_id: str) -> str:
    run: RunRecord = store.get_run(run_id)
    while run.retry_of is not None:
        run = store.get_run(run.retry_of)
    return run.id
