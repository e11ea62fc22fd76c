"""Run a `Scenario` through the reference scheduler and compare the end state.

A scenario is played in a `keep_sdk.cases.World`: an `keep_sdk.app.Installation`
of the built-in plugins only (no entry points, no ``keep.toml``) with a manual clock,
deterministic runs, in-process isolation, a store (``memory://`` by default, any URL
works) and the built-in doubles. A crash abandons the host in the middle of a run
and `Installation.restart` starts a new one on the same store and doubles, as a
supervisor restarting a killed process would. A kill runs the host in a real
subprocess (``keep_sdk.cases._host``) and SIGKILLs it at the point (the doubles are
then backed by a file both processes share).

`make_runtime` lets another runtime be held to the same scenarios: it gets the
store, connectors and the runtime options and returns a `Runtime`-compatible object.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from keep_sdk.app import RuntimeFactory
from keep_sdk.cases import (
    CASE_START,
    Harness,
    Scenario,
    World,
    load_scenario,
    play,
)
from keep_sdk.config import KeepConfig
from keep_sdk.model import BackoffPolicy, HostPolicy, SandboxLimits
from keep_sdk.plugins import KeepPlugins

__all__ = [  # noqa: RUF022 (plain sorted(), as the facade tests check)
    "ALL_GRANTS",
    "RuntimeFactory",
    "SCENARIO_START",
    "ScenarioResult",
    "builtin_scenarios_dir",
    "load_scenario",
    "load_scenarios",
    "run_scenario",
]

SCENARIO_START = CASE_START
"""The manual clock's start unless a scenario says `start`: 09:00 UTC on a Sunday."""

ALL_GRANTS = (
    "approvals.request",
    "gmail.read",
    "gmail.send",
    "jobs.submit",
    "sheets.read",
    "sheets.write",
    "slack.write",
)
"""The grants a scenario gets when it lists none: every permission of the built-in doubles."""


def builtin_scenarios_dir() -> Path:
    """Where the scenarios that ship with keep-sdk are.

    In a wheel they are package data (``keep_sdk/conformance/scenarios/data``);
    in a source checkout they are ``fixtures/scenarios``.
    """
    packaged = Path(__file__).parent / "data"
    if packaged.is_dir():
        return packaged
    return Path(__file__).parents[3] / "fixtures" / "scenarios"


def load_scenarios(directory: Path | None = None) -> list[tuple[Path, Scenario]]:
    """Every ``*.yaml`` scenario in `directory` (the built-in ones by default), by file name."""
    folder = directory if directory is not None else builtin_scenarios_dir()
    return [(p, load_scenario(p)) for p in sorted(folder.glob("*.yaml"))]


@dataclass
class ScenarioResult:
    """What a scenario run found: mismatches (empty when it passed) and a trace."""

    name: str
    mismatches: list[str] = field(default_factory=list)
    trace: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        """True when every expectation held."""
        return not self.mismatches

    def report(self) -> str:
        """The mismatches and the trace of what happened, for a failing test."""
        lines = [f"scenario {self.name}: {len(self.mismatches)} mismatch(es)"]
        lines += [f"  - {m}" for m in self.mismatches]
        lines += ["trace:"] + [f"  {t}" for t in self.trace]
        return "\n".join(lines)


def _policy(overrides: dict[str, Any]) -> HostPolicy:
    values: dict[str, Any] = {
        "sandbox": SandboxLimits(cpu_time_s=2.0, wall_time_s=5.0),
        "backoff": BackoffPolicy(base_s=10.0, cap_s=300.0, jitter=0.0),
        "reconcile_backoff": BackoffPolicy(base_s=30.0, cap_s=300.0, jitter=0.0),
        "reconcile_attempts": 3,
        "mutation_timeout_s": 5.0,
    }
    values.update(overrides)
    return HostPolicy.model_validate(values)


def run_scenario(
    scenario: Scenario,
    *,
    store_url: str = "memory://",
    make_runtime: RuntimeFactory | None = None,
    plugins: KeepPlugins | None = None,
) -> ScenarioResult:
    """Run `scenario` and check every expectation; never raises for a mismatch.

    `plugins` default to the built-in ones only (no entry points)."""
    harness = Harness(
        plugins=plugins or KeepPlugins(load_entry_points=False),
        config=KeepConfig(),
        store_url=store_url,
        policy=_policy(scenario.policy),
        make_runtime=make_runtime,
        kills=not store_url.startswith("memory:")
        and any(step.kill is not None for step in scenario.steps),
        worker="scenario-host",
        source="scenario",
    )
    world = World.open(harness, scenario.start or SCENARIO_START)
    try:
        world.installation.seed(
            scenario.connectors, replace=True, source=f"scenario {scenario.name}: connectors"
        )
        world.deploy(scenario.script)
        world.grant(list(ALL_GRANTS) if scenario.grants is None else scenario.grants)
        found = play(world, scenario.steps, scenario.expect)
    finally:
        world.close()
    return ScenarioResult(scenario.name, [m.line() for m in found], world.trace)
