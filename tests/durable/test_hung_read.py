"""A connector read that never returns ends its phase at the wall-clock limit: the run
leaves `active` (paused, retried later) in both isolations."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from pydantic import BaseModel

from keep_sdk.connectors import Connector, ConnectorSet, operation
from keep_sdk.model import HostPolicy, OperationKind, RunStatus, SandboxLimits
from keep_sdk.plugins import KeepPlugins
from keep_sdk.runtime import Runtime
from keep_sdk.sandbox import InProcessIsolation, Isolation, ProcessIsolation
from keep_sdk.stores import open_store

WALL_S = 1.5

SCRIPT = """
export default Keep.workflow({
  name: "hung",
  topics: { "tick": {} },
  producers: {
    poll: {
      schedule: { interval: "1h" },
      handler: async (ctx, state) => {
        const answer = await ctx.stuck.look({});
        return { seen: answer.late };
      },
    },
  },
});
"""


class Nothing(BaseModel):
    pass


RELEASE = threading.Event()


class Stuck(Connector):
    """A service whose read never answers (until the test ends)."""

    name = "stuck"

    @operation(kind=OperationKind.READ, permission="stuck.read", args=Nothing, name="look")
    def look(self, args: Nothing) -> object:
        RELEASE.wait(120)
        return {"late": True}


@pytest.fixture(params=["in_process", "process"])
def isolation(request: pytest.FixtureRequest) -> Iterator[Isolation]:
    chosen: Isolation = (
        InProcessIsolation() if request.param == "in_process" else ProcessIsolation(prestart=1)
    )
    yield chosen
    RELEASE.set()
    close = getattr(chosen, "close", None)
    if close is not None:
        close()
    RELEASE.clear()


def test_a_read_that_never_returns_ends_the_phase_at_its_wall_limit(
    tmp_path: Path, isolation: Isolation
) -> None:
    store = open_store(f"sqlite:///{tmp_path / 'keep.db'}")
    runtime = Runtime(
        store,
        ConnectorSet([Stuck()]),
        policy=HostPolicy(sandbox=SandboxLimits(wall_time_s=WALL_S)),
        load_workflow=KeepPlugins(load_entry_points=False).load_workflow,
        isolation=isolation,
    )
    runtime.deploy(SCRIPT)
    store.grant_permission("hung", "stuck.read", actor="test")
    started = time.monotonic()
    run = runtime.run_producer("hung", "poll")
    elapsed = time.monotonic() - started
    assert elapsed < WALL_S + 5
    assert run.status is RunStatus.PAUSED_TRANSIENT
    assert run.status is not RunStatus.ACTIVE
    assert "ctx.stuck.look gave no answer within the phase's wall-clock time" in (run.error or "")
    assert store.get_run(run.id).status is RunStatus.PAUSED_TRANSIENT
