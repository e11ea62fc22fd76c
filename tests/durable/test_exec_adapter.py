"""keep+exec:// adapters as real subprocesses: the shipped example, a crash, garbage."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from keep_sdk.conformance import ManualClock
from keep_sdk.connectors import ConnectorSet, ExecAdapter, parse_exec_url
from keep_sdk.connectors.exec_adapter import ExecProgramSpec
from keep_sdk.contract.durable import InvocationStatus
from keep_sdk.errors import InvalidArguments
from keep_sdk.model import BackoffPolicy, HostPolicy, MutationApplied, RunStatus
from keep_sdk.plugins import KeepPlugins
from keep_sdk.runtime import Runtime
from keep_sdk.sandbox import InProcessIsolation
from keep_sdk.scheduler import Scheduler
from keep_sdk.stores import Publication, SupportsDurable, open_store
from tests.durable.harness import T0

ROOT = Path(__file__).parents[2]
SEARCH = os.pathsep.join(
    [str(ROOT / "fixtures" / "adapters"), str(Path(__file__).with_name("adapters"))]
)

ADAPTERS = {
    name: ExecProgramSpec.resolve(name, search_path=SEARCH)
    for name in ("keep-report-runner", "crashy", "garbage")
}

EXEC_WORKFLOW = """
export default Keep.workflow({
  name: "exec-report",
  topics: { "report.requested": {} },
  consumers: {
    run: Keep.consumer({
      subscribe: ["report.requested"],
      async prepare(ctx) {
        const [e] = await ctx.peek("report.requested", { limit: 1 });
        if (!e) return { reservations: [], data: {} };
        return {
          reservations: [{ topic: "report.requested", ids: [e.messageId] }],
          data: { adapter: e.payload.adapter, params: e.payload.params },
        };
      },
      async mutate(ctx, prepared) {
        await ctx.exec.call({ adapter: prepared.data.adapter, params: prepared.data.params });
      },
      async next(ctx, prepared, mutationResult) {
        return { last: mutationResult };
      },
    }),
  },
});
"""


class ExecEnv:
    def __init__(self, url: str) -> None:
        self.clock = ManualClock(T0)
        self.store = open_store(url, clock=self.clock)
        plugins = KeepPlugins(load_entry_points=False)
        self.runtime = Runtime(
            self.store,
            ConnectorSet([ExecAdapter(adapters=ADAPTERS, timeout_s=30)]),
            policy=HostPolicy(backoff=BackoffPolicy(base_s=1, cap_s=1, jitter=0)),
            load_workflow=plugins.load_workflow,
            now=self.clock,
            deterministic=True,
            isolation=InProcessIsolation(),
        )
        self.runtime.deploy(EXEC_WORKFLOW)
        self.store.grant_permission("exec-report", "exec.call", actor="test")
        assert isinstance(self.store, SupportsDurable)
        self.durable: SupportsDurable = self.store

    def request(self, adapter: str, params: object = None) -> None:
        self.store.publish(
            "exec-report",
            Publication(
                topic="report.requested",
                message_id="r1",
                title="Report requested",
                payload={"adapter": adapter, "params": params},
            ),
        )

    def work(self, rounds: int = 6) -> None:
        worker = Scheduler(self.runtime, worker="w1")
        try:
            for _ in range(rounds):
                worker.run_until_idle()
                self.clock.advance(2)
        finally:
            worker.close()


@pytest.fixture
def exec_env(tmp_path: Path) -> Iterator[ExecEnv]:
    env = ExecEnv(f"sqlite:///{tmp_path / 'keep.db'}")
    yield env
    env.store.close()


def test_the_example_adapter_is_polled_to_done(exec_env: ExecEnv) -> None:
    exec_env.request("keep+exec://keep-report-runner/sales?polls=3", {"rows": 7})
    exec_env.work()
    [run] = exec_env.store.list_runs()
    assert run.status is RunStatus.COMMITTED
    assert run.mutation_result == MutationApplied(result={"report": "sales", "rows": 7})
    invocation = exec_env.durable.invocation_for_run(run.id)
    assert invocation is not None
    assert invocation.external_id == f"sales:{invocation.id}"
    attempts = [(a.kind.value, a.outcome) for a in exec_env.durable.list_attempts(invocation.id)]
    assert attempts == [("start", "pending")] + [("poll", "pending")] * 2 + [("poll", "done")]


def test_an_adapter_reporting_failure_fails_the_run(exec_env: ExecEnv) -> None:
    exec_env.request("keep+exec://keep-report-runner/sales?polls=1", {"fail": "disk full"})
    exec_env.work()
    [run] = exec_env.store.list_runs()
    assert run.status is RunStatus.FAILED_LOGIC
    assert "disk full" in (run.error or "")


@pytest.mark.parametrize(
    ("program", "message"),
    [
        ("crashy", "exited with status 3 on start: Traceback (most recent call last): boom"),
        ("garbage", "answered start with 'hello, I am not JSON', which is not a pending"),
    ],
)
def test_a_crashing_or_garbage_adapter_changes_nothing_and_is_retried(
    exec_env: ExecEnv, program: str, message: str
) -> None:
    exec_env.request(f"keep+exec://{program}/x")
    run = exec_env.runtime.run_consumer("exec-report", "run")
    assert run.status is RunStatus.PAUSED_TRANSIENT
    assert message in (run.error or "")
    assert "called again with the same token" in (run.error or "")
    invocation = exec_env.durable.invocation_for_run(run.id)
    assert invocation is not None
    assert invocation.status is InvocationStatus.ACTIVE
    assert not invocation.started
    assert exec_env.durable.list_attempts(invocation.id) == []
    entry = exec_env.store.ledger_entry_for_run(run.id)
    assert entry is not None
    assert entry.status.value == "in_flight"


@pytest.mark.parametrize(
    "url", ["http://x/y", "keep+exec://UPPER/x", "keep+exec:///x", "keep+exec://a b/x"]
)
def test_a_bad_adapter_url_is_refused(url: str) -> None:
    with pytest.raises(InvalidArguments, match="keep\\+exec://<adapter>"):
        parse_exec_url(url)


def test_the_url_parts_reach_the_program() -> None:
    assert parse_exec_url("keep+exec://keep-report-runner/sales/eu?polls=2&x=1") == (
        "keep-report-runner",
        "sales/eu",
        {"polls": "2", "x": "1"},
    )


def test_a_program_not_on_the_operators_list_never_runs(
    exec_env: ExecEnv, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    marker = tmp_path / "ran"
    monkeypatch.setenv("KEEP_MARK", str(marker))
    exec_env.request(f"keep+exec://sh/x?q=$(touch {marker})")
    exec_env.work(rounds=3)
    [run] = exec_env.store.list_runs()
    assert run.status is RunStatus.FAILED_LOGIC
    assert "adapter 'sh' is not an adapter listed in keep.toml" in (run.error or "")
    assert not marker.exists()
