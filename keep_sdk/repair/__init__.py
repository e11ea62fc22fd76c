"""The repair loop as a library: check a script before it is deployed, and repair it.

`check` gives a `Verdict` (validator, cases, replay, permissions); `repair` loops a
fixer until the verdict is ok.
Names are imported on first use (PEP 562): the pytest plugin that collects
``*.keep.yaml`` files imports this package in every pytest run.

`run_case_file` runs a workflow's ``*.keep.yaml`` cases on the installation that will
run it, with a manual clock and seeded doubles (``keep test``; `keep_sdk.cases`);
`replay_runs` runs a new version against the recorded traces of past runs (``keep replay``).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from keep_sdk.cases import CASE_START as CASE_START
    from keep_sdk.cases import Case as TestCase  # noqa: F401
    from keep_sdk.cases import CaseFile as CaseFile
    from keep_sdk.cases import CaseResult as CaseResult
    from keep_sdk.cases import Mismatch as Mismatch
    from keep_sdk.cases import load_case_file as load_case_file
    from keep_sdk.cases import parse_case_file as parse_case_file
    from keep_sdk.cases import run_case as run_case
    from keep_sdk.cases import run_case_file as run_case_file
    from keep_sdk.repair._loop import Fixer as Fixer
    from keep_sdk.repair._loop import RepairResult as RepairResult
    from keep_sdk.repair._loop import Round as Round
    from keep_sdk.repair._loop import Verdict as Verdict
    from keep_sdk.repair._loop import check as check
    from keep_sdk.repair._loop import repair as repair
    from keep_sdk.repair.replay import Difference as Difference
    from keep_sdk.repair.replay import ReplayOutcome as ReplayOutcome
    from keep_sdk.repair.replay import ReplaySummary as ReplaySummary
    from keep_sdk.repair.replay import RunReplay as RunReplay
    from keep_sdk.repair.replay import replay_runs as replay_runs

_HOMES: dict[str, str] = {
    "CASE_START": "keep_sdk.cases",
    "CaseFile": "keep_sdk.cases",
    "CaseResult": "keep_sdk.cases",
    "Difference": "keep_sdk.repair.replay",
    "Fixer": "keep_sdk.repair._loop",
    "Mismatch": "keep_sdk.cases",
    "RepairResult": "keep_sdk.repair._loop",
    "ReplayOutcome": "keep_sdk.repair.replay",
    "ReplaySummary": "keep_sdk.repair.replay",
    "Round": "keep_sdk.repair._loop",
    "RunReplay": "keep_sdk.repair.replay",
    "TestCase": "keep_sdk.cases",
    "Verdict": "keep_sdk.repair._loop",
    "check": "keep_sdk.repair._loop",
    "load_case_file": "keep_sdk.cases",
    "parse_case_file": "keep_sdk.cases",
    "repair": "keep_sdk.repair._loop",
    "replay_runs": "keep_sdk.repair.replay",
    "run_case": "keep_sdk.cases",
    "run_case_file": "keep_sdk.cases",
}
"""Where each public name lives; `__getattr__` imports it from there on first use."""

_RENAMED = {"TestCase": "Case"}
"""Names kept for compatibility: the name here → the name in its home."""

__all__ = sorted(_HOMES)


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module 'keep_sdk.repair' has no attribute {name!r}")
    value = getattr(importlib.import_module(home), _RENAMED.get(name, name))
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return list(__all__)
