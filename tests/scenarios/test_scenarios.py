"""The conformance scenarios (fixtures/scenarios/*.yaml) through the reference scheduler."""

from __future__ import annotations

from pathlib import Path

import pytest

from keep_sdk.conformance import PostgresServer
from keep_sdk.conformance.scenarios import (
    Expectation,
    Kill,
    Scenario,
    Step,
    builtin_scenarios_dir,
    load_scenario,
    load_scenarios,
    run_scenario,
)
from keep_sdk.errors import ConfigurationError

SCENARIOS = Path(__file__).parents[2] / "fixtures" / "scenarios"


def test_the_builtin_scenarios_are_the_fixtures() -> None:
    assert builtin_scenarios_dir().resolve() == SCENARIOS.resolve()
    assert [p.name for p, _ in load_scenarios()] == [
        p.name for p in sorted(SCENARIOS.glob("*.yaml"))
    ]


FILES = sorted(SCENARIOS.glob("*.yaml"))


@pytest.mark.parametrize("path", FILES, ids=[p.stem for p in FILES])
def test_scenario_in_memory(path: Path) -> None:
    result = run_scenario(load_scenario(path))
    assert result.ok, result.report()


@pytest.mark.parametrize("path", FILES, ids=[p.stem for p in FILES])
def test_scenario_on_sqlite(path: Path, tmp_path: Path) -> None:
    result = run_scenario(load_scenario(path), store_url=f"sqlite:///{tmp_path / 'keep.db'}")
    assert result.ok, result.report()


def test_there_are_enough_scenarios_and_they_cover_the_specification() -> None:
    scenarios = [s for _, s in load_scenarios(SCENARIOS)]
    assert len(scenarios) >= 25
    covered = {tag for s in scenarios for tag in s.covers}
    required = {
        "pattern:fifo",
        "pattern:correlation",
        "pattern:batch-with-timeout",
        "pattern:daily-digest",
        "pattern:fan-out",
        "pattern:empty-reservations",
        "failure:transient",
        "failure:permission",
        "failure:logic",
        "failure:precondition",
        "failure:uncertain",
        "reconcile:inline-applied",
        "reconcile:inline-failed",
        "reconcile:background",
        "reconcile:indeterminate",
        "reconcile:not-reconcilable",
        "action:skip-event",
        "action:try-again",
        "action:didnt-happen",
        "action:skip",
        "action:grant",
        "action:pause",
        "action:resume",
        "action:retry",
        "restart-recovery",
        "crash:before-effect",
        "crash:after-effect",
        "durable:kill",
        "retry:emitting",
        "phase-reset",
        "scheduler:coalesced-triggers",
        "scheduler:wakeat",
        "scheduler:cron",
        "scheduler:paused-workflow",
    }
    assert required - covered == set()
    assert len({s.name for s in scenarios}) == len(scenarios)


def test_a_wrong_expectation_is_reported_with_a_trace() -> None:
    scenario = load_scenario(SCENARIOS / "01_fifo-oldest-first.yaml")
    wrong = scenario.model_copy(
        update={"expect": Expectation(runs={"committed": 2}, effects={"sheets.appendRow": 4})}
    )
    result = run_scenario(wrong)
    assert not result.ok
    assert result.mismatches == [
        "end state: runs: expected {'committed': 2}, found {'committed': 3}",
        "end state: effects: expected {'sheets.appendRow': 4}, found {'sheets.appendRow': 3}",
    ]
    assert "rows/addRow: Add row for m1@example.com: done" in result.report()


def test_an_unexpected_refusal_is_a_mismatch() -> None:
    scenario = load_scenario(SCENARIOS / "27_skip-event-refused.yaml")
    steps = list(scenario.steps)
    act = steps[-1].act
    assert act is not None
    steps[-1] = steps[-1].model_copy(update={"act": act.model_copy(update={"error": None})})
    result = run_scenario(scenario.model_copy(update={"steps": steps}))
    assert len(result.mismatches) == 1
    assert "skip_event was refused" in result.mismatches[0]


def test_a_malformed_scenario_names_the_problem(tmp_path: Path) -> None:
    path = tmp_path / "bad.yaml"
    path.write_text(
        "name: bad\ndescription: x\nscript: ''\nsteps:\n  - run: {}\n    advance: 3\nexpect: {}\n"
    )
    with pytest.raises(ConfigurationError, match="exactly one of"):
        load_scenario(path)


def test_every_scenario_file_is_named_after_its_scenario() -> None:
    for path, scenario in load_scenarios(SCENARIOS):
        assert isinstance(scenario, Scenario)
        assert path.stem.split("_", 1)[1] == scenario.name


ON_POSTGRES = [
    p
    for p in FILES
    if any(t.startswith(("restart", "reconcile", "durable")) for t in load_scenario(p).covers)
]


@pytest.mark.postgres
@pytest.mark.parametrize("path", ON_POSTGRES, ids=[p.stem for p in ON_POSTGRES])
def test_recovery_and_durable_scenario_on_postgresql(
    path: Path, postgres_server: PostgresServer
) -> None:
    url = postgres_server.create_database("keep_scenario")
    result = run_scenario(load_scenario(path), store_url=url)
    assert result.ok, result.report()


KILLS = [p for p in FILES if any(step.kill is not None for step in load_scenario(p).steps)]


def test_every_durable_scenario_of_the_issue_runs_on_postgresql() -> None:
    covered = {t for p in ON_POSTGRES for t in load_scenario(p).covers}
    wanted = {
        "durable:park",
        "durable:notify",
        "durable:claims",
        "durable:duplicate",
        "durable:early-notification",
        "durable:kill",
        "durable:poll",
        "durable:timeout",
        "durable:person",
        "durable:cancel",
        "durable:versions",
    }
    assert wanted - covered == set()
    assert len(KILLS) >= 2


@pytest.mark.parametrize("path", KILLS, ids=[p.stem for p in KILLS])
def test_a_kill_step_sigkills_a_real_host_process(path: Path, tmp_path: Path) -> None:
    result = run_scenario(load_scenario(path), store_url=f"sqlite:///{tmp_path / 'keep.db'}")
    assert result.ok, result.report()
    assert any("host process was SIGKILLed" in line for line in result.trace), result.report()


def test_a_kill_point_the_host_never_reaches_is_a_mismatch(tmp_path: Path) -> None:
    scenario = load_scenario(KILLS[0])
    steps = list(scenario.steps)
    at = next(i for i, step in enumerate(steps) if step.kill is not None)
    steps[at] = Step(kill=Kill(call="sheets.appendRow"))
    for url in ("memory://", f"sqlite:///{tmp_path / 'keep.db'}"):
        result = run_scenario(scenario.model_copy(update={"steps": steps}), store_url=url)
        assert any(
            m.startswith("step 2: the host") and "never reached before_effect of sheets" in m
            for m in result.mismatches
        ), result.report()
