"""`keep worker` processes on a PostgreSQL store, and waiting for what they do, for the
outage and chaos tests."""

from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from keep_sdk.errors import StoreUnavailable


def worker(url: str, doubles: Path, name: str, log: Path, *options: str) -> subprocess.Popen[bytes]:
    """A `keep worker` named `name` on `url`, in-process phases, a 2 s lease and a 50 ms
    poll (and `options`), writing stdout and stderr to `log`."""
    with log.open("wb") as output:
        return subprocess.Popen(
            [
                *(sys.executable, "-m", "keep_sdk", "worker", "--store", url),
                *("--doubles", str(doubles), "--isolation", "in-process"),
                *("--lease-ttl", "2", "--poll", "0.05", "--name", name),
                *options,
            ],
            stdout=output,
            stderr=subprocess.STDOUT,
        )


def wait_for(condition: Callable[[], bool], timeout_s: float, what: str) -> None:
    """Poll `condition` every 0.1 s (a store that is down counts as not yet) until it holds;
    fail the test naming `what` after `timeout_s`."""
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            if condition():
                return
        except StoreUnavailable:
            pass
        if time.monotonic() > deadline:
            pytest.fail(f"timed out after {timeout_s}s waiting for {what}")
        time.sleep(0.1)
