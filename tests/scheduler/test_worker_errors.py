"""A worker lives through database errors anywhere in its loop, backing off while they repeat."""

from __future__ import annotations

import datetime as dt
import sqlite3
import threading
from typing import Any

from keep_sdk.conformance import ManualClock
from keep_sdk.connectors import ConnectorSet
from keep_sdk.connectors.builtin import BUILTIN_CONNECTORS
from keep_sdk.plugins import KeepPlugins
from keep_sdk.runtime import Runtime
from keep_sdk.sandbox import InProcessIsolation
from keep_sdk.scheduler import Scheduler
from keep_sdk.stores import MemoryStore


def test_an_error_while_computing_the_next_sleep_does_not_stop_the_worker() -> None:
    clock = ManualClock(dt.datetime(2026, 1, 1, tzinfo=dt.UTC))
    runtime = Runtime(
        MemoryStore(clock=clock),
        ConnectorSet.from_classes(BUILTIN_CONNECTORS),
        load_workflow=KeepPlugins(load_entry_points=False).load_workflow,
        now=clock,
        isolation=InProcessIsolation(),
    )
    worker = Scheduler(runtime, worker="w")
    real = worker.planner.next_due
    calls = {"n": 0}
    stop = threading.Event()
    errors: list[Exception] = []

    def flaky(*args: Any) -> Any:
        calls["n"] += 1
        if calls["n"] <= 3:
            raise sqlite3.OperationalError("disk I/O error")
        stop.set()
        return real(*args)

    worker.planner.next_due = flaky  # type: ignore[method-assign]
    thread = threading.Thread(
        target=worker.run_forever,
        kwargs={"stop": stop, "poll_s": 0.01, "on_error": errors.append},
    )
    thread.start()
    thread.join(timeout=30)
    assert not thread.is_alive()
    assert [type(e).__name__ for e in errors] == ["OperationalError"] * 3
    assert calls["n"] == 4
