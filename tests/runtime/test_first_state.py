"""A handler's `state` is undefined on its first run (specification 06a), so defaults apply."""

from __future__ import annotations

import pytest

from keep_sdk.conformance import ManualClock
from keep_sdk.connectors import ConnectorSet
from keep_sdk.connectors.builtin import BUILTIN_CONNECTORS
from keep_sdk.model import RunStatus
from keep_sdk.plugins import KeepPlugins
from keep_sdk.runtime import Runtime
from keep_sdk.sandbox import InProcessIsolation, Isolation, ProcessIsolation
from keep_sdk.stores import open_store
from tests.runtime.harness import T0

COUNTER = """
export default Keep.workflow({
  name: "counter",
  topics: {},
  producers: {
    count: {
      schedule: { interval: "1m" },
      handler: async (ctx, state = { n: 0 }) => {
        return { n: state.n + 1, seen: typeof state, wasNull: state === null };
      },
    },
  },
  consumers: {},
});
"""


@pytest.mark.parametrize("isolation", [InProcessIsolation, ProcessIsolation])
def test_state_is_undefined_on_the_first_run_and_the_committed_state_after(
    store_url: str, isolation: type[Isolation]
) -> None:
    clock = ManualClock(T0)
    store = open_store(store_url, clock=clock)
    runtime = Runtime(
        store,
        ConnectorSet.from_classes(BUILTIN_CONNECTORS),
        load_workflow=KeepPlugins(load_entry_points=False).load_workflow,
        isolation=isolation(),
        now=clock,
    )
    try:
        runtime.deploy(COUNTER)
        for expected in (1, 2, 3):
            run = runtime.run_producer("counter", "count")
            assert run.status is RunStatus.COMMITTED, run.error
            state = store.get_handler("counter", "count").state
            assert state == {"n": expected, "seen": "object", "wasNull": False}
    finally:
        close = getattr(runtime.isolation, "close", None)
        if callable(close):
            close()
