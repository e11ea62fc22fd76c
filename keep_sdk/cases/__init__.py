"""Workflow cases and conformance scenarios: one YAML model, one loader, one runner.

A case file (``*.keep.yaml``, ``keep test``) names a script and lists cases; a
scenario file (``keep conformance``) holds its script inline. Both are made of the
same `Step` and `Expectation` models (docs/cases.md), read with the same loader
(field paths and a did-you-mean in every error), and played in a `World`: an
`keep_sdk.app.Installation` opened with a `ManualClock`, deterministic runs and
in-process isolation, the same plugins, ``keep.toml`` connectors and doubles as the
installation that will run the script; every connector that is not a double is a
recording stand-in with the real one's operations unless a case lists it in ``live``.

```python
from keep_sdk.cases import run_case_file

for result in run_case_file(Path("invoices.keep.yaml")):
    assert result.ok, result.report()
```
"""

from keep_sdk.cases._cases import (
    CaseResult,
    run_case,
    run_case_file,
    select_cases,
    workflow_source,
)
from keep_sdk.cases._clock import ManualClock
from keep_sdk.cases._crash import SimulatedCrash
from keep_sdk.cases._load import load_case_file, load_scenario, parse_case_file, parse_document
from keep_sdk.cases._model import (
    CASE_START,
    Act,
    Answer,
    Case,
    CaseFile,
    Crash,
    Expectation,
    ExpectedMutation,
    ExpectedPublish,
    ExpectedWait,
    FaultStep,
    Kill,
    NotifyStep,
    PublishStep,
    Scenario,
    StandInSeed,
    Step,
)
from keep_sdk.cases._play import play
from keep_sdk.cases._result import Mismatch, is_subset
from keep_sdk.cases._schema import SCHEMAS, schema_of
from keep_sdk.cases._world import Harness, World

__all__ = [  # noqa: RUF022 (plain sorted(), as the facade tests check)
    "Act",
    "Answer",
    "CASE_START",
    "Case",
    "CaseFile",
    "CaseResult",
    "Crash",
    "Expectation",
    "ExpectedMutation",
    "ExpectedPublish",
    "ExpectedWait",
    "FaultStep",
    "Harness",
    "Kill",
    "ManualClock",
    "Mismatch",
    "NotifyStep",
    "PublishStep",
    "SCHEMAS",
    "Scenario",
    "SimulatedCrash",
    "StandInSeed",
    "Step",
    "World",
    "is_subset",
    "load_case_file",
    "load_scenario",
    "parse_case_file",
    "parse_document",
    "play",
    "run_case",
    "run_case_file",
    "schema_of",
    "select_cases",
    "workflow_source",
]
