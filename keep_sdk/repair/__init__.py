"""The repair loop as a library: test a script against its cases before it is deployed.

`run_case_file` runs a workflow's ``*.keep.yaml`` cases on the real runtime and
sandbox against recording doubles (``keep test``); `replay_runs` runs a new version
against the recorded traces of past runs (``keep replay``).
"""

from keep_sdk.repair.cases import CaseFile, TestCase, load_case_file, parse_case_file
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
    "Mismatch",
    "ReplayOutcome",
    "ReplaySummary",
    "RunReplay",
    "TestCase",
    "load_case_file",
    "parse_case_file",
    "replay_runs",
    "run_case",
    "run_case_file",
]
