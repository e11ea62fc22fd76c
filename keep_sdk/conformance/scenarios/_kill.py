"""The host process a scenario's ``kill`` step starts, and SIGKILLs at a named point.

``python -m keep_sdk.conformance.scenarios._kill`` reads one `KillOrder` as JSON on
stdin, opens the scenario's store and its file-backed doubles, arms the point and
runs the scheduler until idle. At a store fault point (``record_start_answer.run``)
or around a double's operation (``approvals.request``, before or after its effect)
the process sends itself SIGKILL: nothing of it runs on, no ``finally``, no
rollback but the database's own. Reaching the end without being killed exits 3, so
the runner can say the point was never reached.
"""

from __future__ import annotations

import datetime as dt
import os
import signal
import sys
from typing import Any

from pydantic import BaseModel, ConfigDict

from keep_sdk.conformance.scenarios._model import Kill
from keep_sdk.conformance.support import ManualClock
from keep_sdk.connectors import ConnectorSet
from keep_sdk.connectors.builtin import (
    Approvals,
    FaultKind,
    Gmail,
    Jobs,
    ServiceDouble,
    Sheets,
    Slack,
)
from keep_sdk.model import HostPolicy
from keep_sdk.plugins import KeepPlugins
from keep_sdk.runtime import Runtime
from keep_sdk.sandbox import InProcessIsolation
from keep_sdk.scheduler import Scheduler
from keep_sdk.stores import SupportsFaultInjection, open_store

__all__ = ["NOT_KILLED", "KillOrder", "doubles", "main"]

NOT_KILLED = 3
"""The exit code of a host that ran until idle without reaching its kill point."""


class KillOrder(BaseModel):
    """What the killed host runs: the scenario's store, doubles, clock, policy and point."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    store_url: str
    backing: str
    now: dt.datetime
    policy: HostPolicy
    worker: str
    point: Kill


def doubles(backing: str, clock: ManualClock) -> dict[str, ServiceDouble]:
    """The built-in doubles of a scenario world, sharing the file `backing`."""
    made: list[ServiceDouble] = [
        Approvals(backing=backing, clock=clock),
        Jobs(backing=backing, clock=clock),
        Gmail(backing=backing, clock=clock),
        Sheets(backing=backing, clock=clock),
        Slack(backing=backing, clock=clock),
    ]
    return {d.name: d for d in made}


def _die(*_: Any) -> None:
    os.kill(os.getpid(), signal.SIGKILL)


def main(order: KillOrder) -> int:
    """Run the host until its point kills it; `NOT_KILLED` when it never got there."""
    clock = ManualClock(order.now)
    world = doubles(order.backing, clock)
    point = order.point
    store = open_store(order.store_url, clock=clock)
    if point.call is not None:
        connector, _, operation = point.call.partition(".")
        kind = (
            FaultKind.CRASH_BEFORE_EFFECT
            if point.when == "before_effect"
            else FaultKind.CRASH_AFTER_EFFECT
        )
        world[connector].faults.inject(kind, operation=operation, times=None)
    elif isinstance(store, SupportsFaultInjection):
        store.fault_hook = lambda name: _die() if name == point.at else None
    runtime = Runtime(
        store,
        ConnectorSet(list(world.values())),
        policy=order.policy,
        load_workflow=KeepPlugins(load_entry_points=False).load_workflow,
        now=clock,
        deterministic=True,
        isolation=InProcessIsolation(),
    )
    Scheduler(runtime, worker=order.worker, lease_ttl_s=60.0).run_until_idle(max_steps=500)
    store.close()
    return NOT_KILLED


if __name__ == "__main__":
    sys.exit(main(KillOrder.model_validate_json(sys.stdin.read())))
