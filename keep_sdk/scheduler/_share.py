"""`Share`: which due workflows one worker takes, so that several workers divide the work.

Every worker plans from the same store, so without a rule each would try every
due workflow and all but one would lose the claim, every step. The rule, read
from the lease rows of the planning snapshot:

- a workflow whose lease another live worker holds is not this worker's work
  (a holder that is provably dead, `holder_is_dead`, does not count: its
  workflows are taken over at once);
- the live workers are the owners of live lease rows, presence rows included
  (a `keep worker` holds one, `presence_name`, for as long as it runs: the
  first free numbered slot, so the rows never outnumber the workers that ever
  ran at once), and
  this worker;
- a worker holds at most its quota of workflows with due work: the number of
  workflows with due work divided by the live workers, rounded up. Below it, it
  claims the best free workflow; above it, it gives the excess up so another
  worker can take it.

A worker alone (``keep run``, tests, one ``keep worker``) has a quota of every
due workflow: its behaviour does not change.
"""

from __future__ import annotations

import datetime as dt
import math
from collections.abc import Callable, Iterable

from keep_sdk.contract import RESERVED_NAME_PREFIX
from keep_sdk.scheduler._tasks import Task
from keep_sdk.stores import Lease

__all__ = ["PRESENCE_PREFIX", "PRESENCE_SLOTS", "Share", "is_presence", "presence_name"]

PRESENCE_PREFIX = RESERVED_NAME_PREFIX
"""Lease rows under this prefix name a live worker, not a workflow (no workflow may take
such a name: the validator and deploy refuse it)."""


PRESENCE_SLOTS = 1024
"""The most workers that can announce themselves at once."""


def presence_name(slot: int) -> str:
    """The lease row of presence slot `slot`: a running worker holds one to be counted
    while it holds no workflow."""
    return f"{PRESENCE_PREFIX}{slot}"


def is_presence(name: str) -> bool:
    """Whether a lease row is a worker's presence rather than a workflow's lease."""
    return name.startswith(PRESENCE_PREFIX)


class Share:
    """This worker's view of one planning snapshot's leases."""

    def __init__(
        self,
        owner: str,
        leases: Iterable[Lease],
        now: dt.datetime,
        *,
        is_dead: Callable[[Lease], bool],
    ) -> None:
        self.owner = owner
        live = [
            lease
            for lease in leases
            if lease.owner != owner and not lease.expired(now) and not is_dead(lease)
        ]
        self.others = {
            lease.workflow: lease.owner for lease in live if not is_presence(lease.workflow)
        }
        """Workflows another live worker holds, with their holder."""
        self.workers = 1 + len({lease.owner for lease in live})
        """The live workers, this one included."""

    def quota(self, tasks: Iterable[Task]) -> int:
        """How many workflows with due work this worker may hold."""
        due = {task.workflow for task in tasks}
        return max(1, math.ceil(len(due) / self.workers))

    def mine(self, tasks: list[Task]) -> list[Task]:
        """The tasks no other live worker holds, best first."""
        return [task for task in tasks if task.workflow not in self.others]
