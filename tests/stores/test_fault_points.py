"""Every `FaultPoint` is reached by the commit points of every built-in store."""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator
from pathlib import Path

import pytest

from keep_sdk.contract.durable import Pending
from keep_sdk.model import HandlerKind, PrepareResult, Reservation, RunPhase, RunStatus
from keep_sdk.stores import (
    FaultPoint,
    HandlerSpec,
    MemoryStore,
    Publication,
    Resolution,
    SqlStore,
    TransactionalStore,
)

HANDLERS = [
    HandlerSpec(name="poll", kind=HandlerKind.PRODUCER),
    HandlerSpec(name="c", kind=HandlerKind.CONSUMER, subscribe=["in"]),
]


@pytest.fixture(params=["memory", "sqlite"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[TransactionalStore]:
    store: TransactionalStore = (
        MemoryStore() if request.param == "memory" else SqlStore(f"sqlite:///{tmp_path}/k.db")
    )
    yield store
    store.close()


def _prepared(store: TransactionalStore, *ids: str) -> str:
    run = store.begin_run("wf", "c", HandlerKind.CONSUMER)
    reservations = [Reservation(topic="in", ids=list(ids))]
    store.save_prepare_result(run.id, PrepareResult(reservations=reservations))
    return run.id


def test_every_fault_point_is_reached(store: TransactionalStore) -> None:
    reached: list[str] = []
    store.fault_hook = reached.append
    store.deploy("wf", "src", {}, handlers=HANDLERS)
    store.pause_workflow("wf", actor="alice")
    store.resume_workflow("wf", actor="alice")
    store.grant_permission("wf", "sheets.write", actor="alice")
    store.revoke_permission("wf", "sheets.write", actor="alice")
    for mid in ("a", "b", "c"):
        store.publish("wf", Publication(topic="in", message_id=mid, title=mid))
    store.skip_event(store.events_by_ids("wf", "in", ["c"])[0].id, actor="alice")
    crashed = _prepared(store, "a")
    store.set_run_status(crashed, RunStatus.CRASHED, release_reservations=True)
    retry = store.begin_run(
        "wf", "c", HandlerKind.CONSUMER, retry_of=crashed, phase=RunPhase.PREPARING
    )
    store.set_run_status(retry.id, RunStatus.FAILED_LOGIC)
    for mid in ("a", "b"):
        run = _prepared(store, mid)
        store.advance_phase(run, RunPhase.MUTATING)
        entry = store.record_mutation_intent(
            run, connector="sheets", operation="appendRow", params={}, idempotency_key=run
        )
        if mid == "a":
            store.record_mutation_applied(entry.id, {"row": 1})
        else:
            store.record_mutation_indeterminate(entry.id, error="timeout")
            store.resolve_mutation(entry.id, Resolution.HAPPENED, actor="alice")
        store.commit_consumer_run(
            run, state={"n": 1}, publishes=[Publication(topic="out", message_id=mid, title=mid)]
        )
    producer = store.begin_run("wf", "poll", HandlerKind.PRODUCER)
    store.commit_producer_run(
        producer.id,
        state={"cursor": 1},
        publishes=[Publication(topic="in", message_id="d", title="d")],
        next_run_at=dt.datetime(2030, 1, 1, tzinfo=dt.UTC),
    )
    store.publish("wf", Publication(topic="in", message_id="e", title="e"))
    parked = _prepared(store, "e")
    store.advance_phase(parked, RunPhase.MUTATING)
    _, invocation = store.record_durable_intent(
        parked,
        connector="approvals",
        operation="request",
        params={},
        idempotency_key=parked,
        invocation_id="inv-" + "1" * 40,
        correlation_key="kc-" + "1" * 40,
        timeout_at=None,
    )
    store.record_start_answer(invocation.id, Pending())
    notification = store.receive_notification(invocation.correlation_key, {}, source="test")
    store.apply_notification(notification.id)
    assert set(reached) == set(FaultPoint)
    assert all(isinstance(point, FaultPoint) for point in reached)
