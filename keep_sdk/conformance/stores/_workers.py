"""Work loops the concurrency tests run in threads and in child processes."""

from __future__ import annotations

import time
from typing import Any

from keep_sdk.errors import ActiveRunExists, EventNotPending
from keep_sdk.model import FailureKind, HandlerKind, PrepareResult, Reservation, RunStatus
from keep_sdk.stores import Store

__all__ = ["consume_all", "try_begin"]


def consume_all(store: Store, workflow: str, handler: str, topic: str = "in") -> dict[str, Any]:
    """Consume pending events one run at a time until none is left, racing other workers.

    Returns the messageIds this worker consumed, the runs it lost to another
    worker's active run, and reservations refused (a correct store never
    refuses one here: runs are exclusive).
    """
    consumed: list[str] = []
    refused = 0
    lost = 0
    while True:
        try:
            run = store.begin_run(workflow, handler, HandlerKind.CONSUMER)
        except ActiveRunExists:
            lost += 1
            time.sleep(0.001)
            continue
        pending = store.pending_events(workflow, topic, limit=1)
        ids = [e.message_id for e in pending]
        reservations = [Reservation(topic=topic, ids=ids)] if ids else []
        try:
            store.save_prepare_result(run.id, PrepareResult(reservations=reservations))
        except EventNotPending:
            refused += 1
            store.set_run_status(run.id, RunStatus.FAILED_INTERNAL, failure=FailureKind.INTERNAL)
            continue
        store.commit_consumer_run(run.id, state={"consumed": len(consumed) + len(ids)})
        if not ids:
            return {"consumed": consumed, "refused": refused, "lost": lost}
        consumed.extend(ids)


def try_begin(store: Store, workflow: str, handler: str, start_at: float) -> bool:
    """Wait until `start_at` (epoch seconds), then try to begin a run; True if it began."""
    time.sleep(max(0.0, start_at - time.time()))
    try:
        store.begin_run(workflow, handler, HandlerKind.CONSUMER)
    except ActiveRunExists:
        return False
    return True
