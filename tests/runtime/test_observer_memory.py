"""Observers hold nothing: 1,500 runs through a worker leave the runtime's memory flat.

The store reports each committed change once; the runtime passes it on and keeps
nothing. Memory is measured with tracemalloc, counting only what was allocated by
code in the runtime and scheduler packages and is still alive, so the store's own
growing history (the memory store keeps every run) does not count. That history
includes each run's trace, whose phase records `keep_sdk/runtime/_tracing.py` builds
and hands to the store with the run; the runtime's own buffer of them (in
`engine.py`) is still counted.
"""

from __future__ import annotations

import datetime as dt
import gc
import tracemalloc

import pytest

from keep_sdk.conformance import ManualClock
from keep_sdk.connectors import ConnectorSet
from keep_sdk.connectors.builtin import BUILTIN_CONNECTORS
from keep_sdk.contract.observations import Observation, RunChanged
from keep_sdk.plugins import KeepPlugins
from keep_sdk.runtime import Runtime
from keep_sdk.sandbox import InProcessIsolation
from keep_sdk.scheduler import Scheduler
from keep_sdk.stores import MemoryStore

TICK = """
export default Keep.workflow({
  name: "tick",
  topics: {},
  producers: {
    tick: {
      schedule: { interval: "1m" },
      handler: async (ctx, state) => ({ n: (state?.n ?? 0) + 1 }),
    },
  },
  consumers: {},
});
"""

WARM_UP = 500
RUNS = 1_500
FLAT_BYTES = 8 * (RUNS - WARM_UP)
"""What the runtime may still hold after the runs past the warm-up: less than one pointer
(8 bytes) per run, so keeping anything per run fails (measured: 0 bytes held)."""

HOLDERS = ("*/keep_sdk/runtime/*", "*/keep_sdk/scheduler/*")
STORED = ("*/keep_sdk/runtime/_tracing.py",)
"""Built for the store: the run's trace records, part of the run the store keeps."""


def _held(snapshot: tracemalloc.Snapshot) -> int:
    filters = [tracemalloc.Filter(True, pattern) for pattern in HOLDERS]
    filters += [tracemalloc.Filter(False, pattern) for pattern in STORED]
    return sum(stat.size for stat in snapshot.filter_traces(filters).statistics("filename"))


@pytest.mark.slow
def test_thousands_of_runs_leave_the_runtimes_memory_flat() -> None:
    clock = ManualClock(dt.datetime(2026, 1, 1, tzinfo=dt.UTC))
    store = MemoryStore(clock=clock)
    counted = {"runs": 0}

    def observe(observation: Observation) -> None:
        if isinstance(observation, RunChanged) and observation.previous is None:
            counted["runs"] += 1

    runtime = Runtime(
        store,
        ConnectorSet.from_classes(BUILTIN_CONNECTORS),
        load_workflow=KeepPlugins(load_entry_points=False).load_workflow,
        observe=observe,
        isolation=InProcessIsolation(),
        now=clock,
    )
    runtime.deploy(TICK)
    worker = Scheduler(runtime, worker="w")

    def work(runs: int) -> None:
        for _ in range(runs):
            clock.advance(60)
            worker.run_until_idle()

    work(WARM_UP // 10)
    tracemalloc.start(1)
    try:
        work(WARM_UP - WARM_UP // 10)
        gc.collect()
        before = _held(tracemalloc.take_snapshot())
        work(RUNS - WARM_UP)
        gc.collect()
        after = _held(tracemalloc.take_snapshot())
    finally:
        tracemalloc.stop()
    assert counted["runs"] == RUNS
    assert after - before < FLAT_BYTES, (
        f"the runtime kept {after - before} bytes over {RUNS - WARM_UP:,} runs"
    )
