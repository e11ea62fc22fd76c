"""Conformance scenarios as data: a script, the world, a person's actions, the end state.

```python
from keep_sdk.conformance.scenarios import load_scenarios, run_scenario

for path, scenario in load_scenarios():          # the built-in scenarios (or a directory)
    result = run_scenario(scenario, store_url="memory://")
    assert result.ok, result.report()
```

`run_scenario(..., make_runtime=factory)` holds another runtime to the same
scenarios. Scenario files share their steps and expectations with workflow case
files (`keep_sdk.cases`, documented in docs/cases.md).
"""

from keep_sdk.cases import (
    Act,
    Crash,
    Expectation,
    FaultStep,
    Kill,
    PublishStep,
    Scenario,
    SimulatedCrash,
    Step,
)
from keep_sdk.conformance.scenarios._runner import (
    ALL_GRANTS,
    SCENARIO_START,
    RuntimeFactory,
    ScenarioResult,
    builtin_scenarios_dir,
    load_scenario,
    load_scenarios,
    run_scenario,
)

__all__ = [  # noqa: RUF022 (plain sorted(), as the facade tests check)
    "ALL_GRANTS",
    "Act",
    "Crash",
    "Expectation",
    "FaultStep",
    "Kill",
    "PublishStep",
    "RuntimeFactory",
    "SCENARIO_START",
    "Scenario",
    "ScenarioResult",
    "SimulatedCrash",
    "Step",
    "builtin_scenarios_dir",
    "load_scenario",
    "load_scenarios",
    "run_scenario",
]
