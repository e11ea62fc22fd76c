"""The composition root: `Installation` and its helpers."""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator
from pathlib import Path

import pytest

from keep_sdk.app import Installation, default_doubles_path, load_seed
from keep_sdk.connectors.builtin import Sheets
from keep_sdk.errors import ActionRefused, ConfigurationError
from keep_sdk.scheduler import Scheduler

WORKFLOW = """
export default Keep.workflow({
  name: "tiny",
  topics: { "t": {} },
  producers: { p: { schedule: { interval: "5m" }, handler: async (ctx, state) => state } },
  consumers: {},
});
"""


@pytest.fixture
def installation(tmp_path: Path) -> Iterator[Installation]:
    inst = Installation.open(f"sqlite:///{tmp_path / 'keep.db'}", isolation="in-process")
    yield inst
    inst.close()


def test_the_doubles_live_next_to_a_sqlite_store_and_in_memory_otherwise(tmp_path: Path) -> None:
    assert default_doubles_path(f"sqlite:///{tmp_path}/keep.db") == tmp_path / "doubles.db"
    assert default_doubles_path("memory://") is None


def test_seed_files_are_json_or_yaml_keyed_by_connector(tmp_path: Path) -> None:
    (tmp_path / "a.json").write_text('{"sheets": {"spreadsheets": {}}}')
    (tmp_path / "a.yaml").write_text("slack:\n  channels: {}\n")
    (tmp_path / "bad.json").write_text('["not", "a", "map"]')
    assert load_seed(tmp_path / "a.json") == {"sheets": {"spreadsheets": {}}}
    assert load_seed(tmp_path / "a.yaml") == {"slack": {"channels": {}}}
    with pytest.raises(ConfigurationError, match="must map connector names"):
        load_seed(tmp_path / "bad.json")
    with pytest.raises(ConfigurationError, match="cannot read"):
        load_seed(tmp_path / "missing.json")


def test_open_wires_the_store_the_connectors_and_the_runtime(
    installation: Installation, tmp_path: Path
) -> None:
    assert installation.runtime.store is installation.store
    assert installation.runtime.connectors is installation.connectors
    assert installation.doubles_path == tmp_path / "doubles.db"
    assert installation.seed({"sheets": {"spreadsheets": {"s": {"rows": []}}}}) == ["sheets"]
    backed = Sheets(backing=tmp_path / "doubles.db").snapshot()
    assert backed["spreadsheets"] == {"s": {"rows": []}}
    scheduler = installation.scheduler(worker="w1", lease_ttl_s=5)
    assert isinstance(scheduler, Scheduler)
    assert (scheduler.runtime, scheduler.worker) == (installation.runtime, "w1")


def test_an_unknown_isolation_is_a_configuration_error() -> None:
    with pytest.raises(ConfigurationError, match="unknown isolation"):
        Installation.open("memory://", isolation="thread")


def test_holding_takes_the_workflow_lease_and_releases_it(installation: Installation) -> None:
    installation.runtime.deploy(WORKFLOW)
    with installation.holding("tiny", worker="cli:1", wait_s=0):
        lease = installation.store.get_lease("tiny")
        assert lease is not None
        assert lease.owner == "cli:1"
    lease = installation.store.get_lease("tiny")
    assert lease is None or lease.expired(installation.runtime.now())


def test_holding_refuses_while_another_worker_holds_the_workflow(
    installation: Installation,
) -> None:
    installation.runtime.deploy(WORKFLOW)
    installation.store.acquire_lease("tiny", "worker-a", ttl=dt.timedelta(seconds=60))
    with (
        pytest.raises(ActionRefused, match="busy on worker-a"),
        installation.holding("tiny", worker="cli:1", wait_s=0),
    ):
        pytest.fail("the lease was taken from its holder")


_TICKING = """
export default Keep.workflow({
  name: "ticking",
  topics: {},
  producers: {
    tick: {
      schedule: { interval: "1m" },
      handler: async (ctx, state) => ({ at: new Date().toISOString(), n: (state?.n ?? 0) + 1 }),
    },
  },
});
"""


def test_one_clock_moves_the_store_the_doubles_the_runtime_and_the_scheduler() -> None:
    from keep_sdk.conformance import ManualClock

    start = dt.datetime(2030, 1, 1, 8, 0, tzinfo=dt.UTC)
    clock = ManualClock(start)
    with Installation.open(
        "memory://", clock=clock, deterministic=True, isolation="in-process"
    ) as inst:
        assert inst.runtime.now() == start
        assert inst.scheduler().clock() == start
        sheets = inst.connectors["sheets"]
        assert isinstance(sheets, Sheets)
        assert sheets.clock() == start
        inst.runtime.deploy(_TICKING)
        scheduler = inst.scheduler(worker="w")
        scheduler.run_until_idle()
        first = inst.store.get_handler("ticking", "tick").state
        assert first == {"at": "2030-01-01T08:00:00.000Z", "n": 1}
        scheduler.run_until_idle()
        assert inst.store.get_handler("ticking", "tick").state == first
        clock.advance(60)
        scheduler.run_until_idle()
        assert inst.store.get_handler("ticking", "tick").state == {
            "at": "2030-01-01T08:01:00.000Z",
            "n": 2,
        }


def test_the_default_isolation_is_a_separate_process(tmp_path: Path) -> None:
    from keep_sdk.app import DEFAULT_ISOLATION
    from keep_sdk.sandbox import ProcessIsolation

    assert DEFAULT_ISOLATION == "process"
    with Installation.open(f"sqlite:///{tmp_path / 'keep.db'}") as inst:
        assert isinstance(inst.runtime.isolation, ProcessIsolation)


def test_restart_builds_a_new_runtime_on_the_same_store_and_connectors() -> None:
    with Installation.open("memory://", isolation="in-process") as inst:
        old = inst.runtime
        new = inst.restart()
        assert new is inst.runtime
        assert new is not old
        assert new.store is old.store
        assert new.connectors is old.connectors
        assert new.isolation is old.isolation
        assert new.policy == old.policy
