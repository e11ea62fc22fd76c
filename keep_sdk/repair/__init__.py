"""The repair loop as a library: check a script before it is deployed, and repair it.

`check` gives a `Verdict` (validator, cases, replay, permissions); `repair` loops a
fixer until the verdict is ok.
Names are imported on first use (PEP 562): the pytest plugin that collects
``*.keep.yaml`` files imports this package in every pytest run.

`run_case_file` runs a workflow's ``*.keep.yaml`` cases on the real runtime and
sandbox against recording doubles (``keep test``); `replay_runs` runs a new version
against the recorded traces of past runs (``keep replay``).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from keep_sdk.repair.cases import CaseFile as CaseFile
    from keep_sdk.repair.cases import TestCase as TestCase
    from keep_sdk.repair.cases import load_case_file as load_case_file
    from keep_sdk.repair.cases import parse_case_file as parse_case_file
    from keep_sdk.repair.loop import Fixer as Fixer
    from keep_sdk.repair.loop import RepairResult as RepairResult
    from keep_sdk.repair.loop import Round as Round
    from keep_sdk.repair.loop import Verdict as Verdict
    from keep_sdk.repair.loop import check as check
    from keep_sdk.repair.loop import repair as repair
    from keep_sdk.repair.replay import Difference as Difference
    from keep_sdk.repair.replay import ReplayOutcome as ReplayOutcome
    from keep_sdk.repair.replay import ReplaySummary as ReplaySummary
    from keep_sdk.repair.replay import RunReplay as RunReplay
    from keep_sdk.repair.replay import replay_runs as replay_runs
    from keep_sdk.repair.testing import CASE_START as CASE_START
    from keep_sdk.repair.testing import CaseResult as CaseResult
    from keep_sdk.repair.testing import Mismatch as Mismatch
    from keep_sdk.repair.testing import run_case as run_case
    from keep_sdk.repair.testing import run_case_file as run_case_file

_HOMES: dict[str, str] = {
    "CASE_START": "keep_sdk.repair.testing",
    "CaseFile": "keep_sdk.repair.cases",
    "CaseResult": "keep_sdk.repair.testing",
    "Difference": "keep_sdk.repair.replay",
    "Fixer": "keep_sdk.repair.loop",
    "Mismatch": "keep_sdk.repair.testing",
    "RepairResult": "keep_sdk.repair.loop",
    "ReplayOutcome": "keep_sdk.repair.replay",
    "ReplaySummary": "keep_sdk.repair.replay",
    "Round": "keep_sdk.repair.loop",
    "RunReplay": "keep_sdk.repair.replay",
    "TestCase": "keep_sdk.repair.cases",
    "Verdict": "keep_sdk.repair.loop",
    "check": "keep_sdk.repair.loop",
    "load_case_file": "keep_sdk.repair.cases",
    "parse_case_file": "keep_sdk.repair.cases",
    "repair": "keep_sdk.repair.loop",
    "replay_runs": "keep_sdk.repair.replay",
    "run_case": "keep_sdk.repair.testing",
    "run_case_file": "keep_sdk.repair.testing",
}
"""Where each public name lives; `__getattr__` imports it from there on first use."""

__all__ = sorted(_HOMES)


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module 'keep_sdk.repair' has no attribute {name!r}")
    value = getattr(importlib.import_module(home), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return list(__all__)
