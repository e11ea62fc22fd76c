"""A lease whose holder died on this host is taken over at once, not after its time runs out."""

from __future__ import annotations

import datetime as dt
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from keep_sdk.scheduler import LeaseKeeper, default_worker_name
from keep_sdk.scheduler._holders import holder_is_dead
from keep_sdk.stores import open_store

HOLD = """
import sys, datetime as dt, time
from keep_sdk.stores import open_store
from keep_sdk.scheduler import default_worker_name
store = open_store(sys.argv[1])
lease = store.acquire_lease("w", default_worker_name(), ttl=dt.timedelta(hours=1))
print(lease.owner, flush=True)
time.sleep(600)
"""

NOW = dt.datetime.now(dt.UTC)


def _holder(url: str) -> tuple[subprocess.Popen[str], str]:
    child = subprocess.Popen([sys.executable, "-c", HOLD, url], stdout=subprocess.PIPE, text=True)
    assert child.stdout is not None
    return child, child.stdout.readline().strip()


def _kill(child: subprocess.Popen[str]) -> None:
    child.send_signal(signal.SIGKILL)
    _reap(child)


def _reap(child: subprocess.Popen[str]) -> None:
    child.wait(timeout=30)
    if child.stdout is not None:
        child.stdout.close()


def test_a_killed_holders_lease_is_taken_over_at_once(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path}/keep.db"
    child, owner = _holder(url)
    keeper = LeaseKeeper(open_store(url), "me", ttl=dt.timedelta(seconds=30))
    try:
        assert keeper.claim("w") is None, "taken from a live holder"
    finally:
        _kill(child)
    lease = keeper.claim("w")
    assert lease is not None
    assert lease.owner == "me"
    assert holder_is_dead(owner, NOW - dt.timedelta(minutes=1))


def test_a_zombie_holder_counts_as_dead(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path}/keep.db"
    child, _ = _holder(url)
    child.send_signal(signal.SIGKILL)
    os.waitid(os.P_PID, child.pid, os.WEXITED | os.WNOWAIT)
    try:
        keeper = LeaseKeeper(open_store(url), "me", ttl=dt.timedelta(seconds=30))
        assert keeper.claim("w") is not None
    finally:
        _reap(child)


@pytest.mark.parametrize(
    "owner",
    [
        "another-host:1:abc",
        "no-pid-here",
        f"{default_worker_name().split(':')[0]}:notanumber:x",
        default_worker_name(),
    ],
    ids=["another-host", "no-pid", "pid-not-a-number", "this-process"],
)
def test_what_cannot_be_proven_dead_is_alive(owner: str) -> None:
    assert not holder_is_dead(owner, NOW)


def test_a_holder_on_another_host_keeps_its_lease(tmp_path: Path) -> None:
    store = open_store(f"sqlite:///{tmp_path}/keep.db")
    assert store.acquire_lease("w", "another-host:1:abc", ttl=dt.timedelta(hours=1))
    keeper = LeaseKeeper(store, "me", ttl=dt.timedelta(seconds=30))
    assert keeper.claim("w") is None
