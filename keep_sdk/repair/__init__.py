"""The repair loop as a library: check a script before it is deployed, and repair it.

`check` gives a `Verdict` (validator, cases, replay, permissions); `repair` loops a
fixer until the verdict is ok.

`run_case_file` runs a workflow's ``*.keep.yaml`` cases on the real runtime and
sandbox against recording doubles (``keep test``); `replay_runs` runs a new version
against the recorded traces of past runs (``keep replay``).
"""

from keep_sdk.repair.cases import CaseFile, TestCase, load_case_file, parse_case_file
from keep_sdk.repair.loop import Fixer, RepairResult, Round, Verdict, check, repair
from keep_sdk.repair.replay import (
    Difference,
    ReplayOutcome,
    ReplaySummary,
    RunReplay,
    replay_runs,
)
from keep_sdk.repair.testing import CASE_START, CaseResult, Mismatch, run_case, run_case_file

__all__ = [
    "CASE_START",
    "CaseFile",
    "CaseResult",
    "Difference",
    "Fixer",
    "Mismatch",
    "RepairResult",
    "ReplayOutcome",
    "ReplaySummary",
    "Round",
    "RunReplay",
    "TestCase",
    "Verdict",
    "check",
    "load_case_file",
    "parse_case_file",
    "repair",
    "replay_runs",
    "run_case",
    "run_case_file",
]
