"""Whether the worker holding a lease is provably dead: same host, its process gone.

Worker names are ``host:pid:random`` (`default_worker_name`). A lease whose holder
ran on this host in a process that no longer exists (or is a zombie, or whose pid
now belongs to a process started after the lease was taken) cannot be renewed by
anyone, so waiting out its time only delays recovery. Anything this module cannot
prove (another host, another naming scheme, no permission to look) counts as alive.
"""

from __future__ import annotations

import datetime as dt
import os
import socket
from pathlib import Path

__all__ = ["holder_is_dead"]

_PROC = Path("/proc")


def holder_is_dead(owner: str, acquired_at: dt.datetime) -> bool:
    """True only when `owner` names a process of this host that is gone."""
    host, _, rest = owner.partition(":")
    pid_text = rest.partition(":")[0]
    if host != socket.gethostname() or not pid_text.isdigit():
        return False
    pid = int(pid_text)
    if pid == os.getpid():
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except PermissionError:
        return False
    return _zombie_or_younger(pid, acquired_at)


def _zombie_or_younger(pid: int, acquired_at: dt.datetime) -> bool:
    """Linux: the pid is a zombie, or a process started after the lease was acquired."""
    try:
        stat = (_PROC / str(pid) / "stat").read_text()
        boot = next(
            int(line.split()[1])
            for line in (_PROC / "stat").read_text().splitlines()
            if line.startswith("btime ")
        )
    except (OSError, StopIteration, ValueError, IndexError):
        return False
    fields = stat.rpartition(")")[2].split()
    if fields[0] == "Z":
        return True
    ticks = os.sysconf("SC_CLK_TCK")
    started = dt.datetime.fromtimestamp(boot + int(fields[19]) / ticks, dt.UTC)
    return started > acquired_at + dt.timedelta(seconds=1)
