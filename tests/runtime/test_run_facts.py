"""The runtime records run facts as fields: transient failures and the awaited permission."""

from __future__ import annotations

from keep_sdk.connectors.builtin import FaultKind
from keep_sdk.model import RunRecord, RunStatus
from tests.runtime.harness import Env, make_env


def run(env: Env) -> RunRecord:
    return env.runtime.run_consumer("mail-to-sheet", "appendRow")


def test_each_transient_failure_is_counted_on_the_run(env: Env) -> None:
    env.publish("m1")
    env.sheets.faults.inject(FaultKind.TRANSIENT, operation="appendRow", times=2)
    paused = run(env)
    assert (paused.status, paused.transient_failures) == (RunStatus.PAUSED_TRANSIENT, 1)
    again = env.runtime.resume(paused.id)
    assert (again.status, again.transient_failures) == (RunStatus.PAUSED_TRANSIENT, 2)
    assert env.store.get_run(paused.id).transient_failures == 2
    done = env.runtime.resume(paused.id)
    assert (done.status, done.transient_failures) == (RunStatus.COMMITTED, 2)
    assert sum(line.startswith("host: transient failure ") for line in done.logs) == 2


def test_a_run_waiting_for_a_grant_names_the_permission(store_url: str) -> None:
    env = make_env(store_url, grants=("gmail.read",))
    env.publish("m1")
    paused = run(env)
    assert (paused.status, paused.waiting_permission) == (
        RunStatus.PAUSED_APPROVAL,
        "sheets.write",
    )
    assert env.store.get_run(paused.id).waiting_permission == "sheets.write"
    [resumed] = env.actions.grant("mail-to-sheet", "sheets.write", actor="alice")
    assert (resumed.status, resumed.waiting_permission) == (RunStatus.COMMITTED, None)
