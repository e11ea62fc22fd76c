"""What the store suite shares: the standard handlers, state snapshots, opening a URL."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from keep_sdk.conformance._support import FaultInjector, InjectedFault, ManualClock, open_url
from keep_sdk.model import HandlerKind
from keep_sdk.stores import HandlerSpec, Store

__all__ = [
    "CONSUMER",
    "PRODUCER",
    "STANDARD_HANDLERS",
    "FaultInjector",
    "InjectedFault",
    "ManualClock",
    "open_url",
    "snapshot",
]

PRODUCER = "poll"
CONSUMER = "process"
STANDARD_HANDLERS = (
    HandlerSpec(name=PRODUCER, kind=HandlerKind.PRODUCER),
    HandlerSpec(name=CONSUMER, kind=HandlerKind.CONSUMER, subscribe=["in", "other"]),
    HandlerSpec(name="forward", kind=HandlerKind.CONSUMER, subscribe=["out"]),
)
"""Handlers of the workflow every test deploys: a producer and two consumers."""


def snapshot(store: Store, workflows: Iterable[str]) -> dict[str, Any]:
    """Everything a store shows about `workflows` through its queries, for equality checks."""
    state: dict[str, Any] = {}
    for name in workflows:
        runs = store.list_runs(workflow=name)
        state[name] = {
            "workflow": store.get_workflow(name),
            "version": store.get_workflow_version(name),
            "handlers": store.list_handlers(name),
            "events": store.list_events(name),
            "runs": runs,
            "ledger": store.list_ledger(workflow=name),
            "audit": [a.model_dump(exclude={"seq"}) for a in store.audit_log(workflow=name)],
            "lease": store.get_lease(name),
        }
    return state
