"""SIGKILL around ``start``: the next worker calls start again with the same token, and
exactly one external process (one approval request) exists."""

from __future__ import annotations

import signal
import subprocess
import sys
from pathlib import Path

import pytest

from keep_sdk.contract.durable import InvocationStatus
from keep_sdk.model import RunPhase, RunStatus
from keep_sdk.scheduler import Scheduler
from tests.durable.harness import make_env

CHILD = Path(__file__).with_name("crash_child.py")
ROOT = Path(__file__).parents[2]


@pytest.mark.parametrize(
    "point",
    [
        "after:record_durable_intent",
        "connector:crash_before_effect",
        "connector:crash_after_effect",
    ],
)
def test_a_kill_around_start_reissues_it_with_the_same_token_once(
    tmp_path: Path, point: str
) -> None:
    url = f"sqlite:///{tmp_path / 'keep.db'}"
    backing = tmp_path / "doubles.db"
    setup = make_env(url, backing=backing)
    setup.need("m1")
    setup.store.close()

    child = subprocess.run(
        [sys.executable, str(CHILD), url, str(backing), point],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert child.returncode == -signal.SIGKILL, child.stderr

    env = make_env(url, backing=backing, deploy=False)
    try:
        [crashed] = env.store.active_runs()
        invocation = env.durable.invocation_for_run(crashed.id)
        assert invocation is not None
        assert invocation.status is InvocationStatus.ACTIVE
        assert not invocation.started
        effects_before = len(env.approvals.effects("request"))
        assert effects_before == (1 if point.endswith("after_effect") else 0)

        worker = Scheduler(env.runtime, worker="after-crash")
        worker.run_until_idle()
        worker.close()

        run = env.store.get_run(crashed.id)
        assert (run.status, run.phase) == (RunStatus.PAUSED_WAITING, RunPhase.MUTATING)
        effects = env.approvals.effects("request")
        assert len(effects) == 1
        assert effects[0]["idempotencyKey"] == invocation.id
        again = env.durable.get_invocation(invocation.id)
        assert again.started
        assert again.correlation_key == invocation.correlation_key
        assert env.runtime.notify(again.correlation_key, {"file": "p.pdf"}).applied
        assert env.store.get_run(crashed.id).status is RunStatus.COMMITTED
    finally:
        env.store.close()
