"""The host process a ``kill`` step starts, and SIGKILLs at a named point.

``python -m keep_sdk.cases._host`` reads one `KillOrder` as JSON on stdin, opens
the installation of the harness (its store and its file-backed doubles, through
`keep_sdk.app.Installation.open`), arms the point and runs the scheduler until
idle. At a store fault point (``record_start_answer.run``) or around a double's
operation (``approvals.request``, before or after its effect) the process sends
itself SIGKILL: nothing of it runs on, no ``finally``, no rollback but the
database's own. Reaching the end without being killed exits 3, so the harness can
say the point was never reached.
"""

from __future__ import annotations

import datetime as dt
import math
import os
import signal
import sys
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict

from keep_sdk.app import Installation
from keep_sdk.cases._clock import ManualClock
from keep_sdk.cases._model import Kill
from keep_sdk.config import KeepConfig
from keep_sdk.connectors.builtin import FaultKind, ServiceDouble
from keep_sdk.errors import ConfigurationError
from keep_sdk.model import HostPolicy
from keep_sdk.plugins import KeepPlugins
from keep_sdk.stores import SupportsFaultInjection

__all__ = ["NOT_KILLED", "KillOrder", "main"]

NOT_KILLED = 3
"""The exit code of a host that ran until idle without reaching its kill point."""


class KillOrder(BaseModel):
    """What the killed host runs: the harness's store, doubles, clock, policy and point."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    store_url: str
    backing: str
    now: dt.datetime
    policy: HostPolicy
    worker: str
    point: Kill


def _die(*_: Any) -> None:
    os.kill(os.getpid(), signal.SIGKILL)


def main(order: KillOrder) -> int:
    """Run the host until its point kills it; `NOT_KILLED` when it never got there."""
    point = order.point
    with Installation.open(
        order.store_url,
        plugins=KeepPlugins(load_entry_points=False),
        config=KeepConfig(),
        clock=ManualClock(order.now),
        deterministic=True,
        isolation="in-process",
        doubles=Path(order.backing),
        policy=order.policy,
    ) as installation:
        if point.call is not None:
            name, _, operation = point.call.partition(".")
            double = installation.connectors.get(name)
            if not isinstance(double, ServiceDouble):
                raise ConfigurationError(f"kill: {name!r} is not a double of this installation")
            kind = (
                FaultKind.CRASH_BEFORE_EFFECT
                if point.when == "before_effect"
                else FaultKind.CRASH_AFTER_EFFECT
            )
            double.faults.inject(kind, operation=operation, times=None)
        elif isinstance(installation.store, SupportsFaultInjection):
            installation.store.fault_hook = lambda name: _die() if name == point.at else None
        scheduler = installation.scheduler(worker=order.worker, lease_ttl_s=60.0, drain_s=math.inf)
        scheduler.run_until_idle(max_steps=500)
    return NOT_KILLED


if __name__ == "__main__":
    sys.exit(main(KillOrder.model_validate_json(sys.stdin.read())))
