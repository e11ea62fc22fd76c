"""The pytest plugin (entry point ``pytest11``) that collects workflow cases: every
``*.keep.yaml`` file pytest is pointed at (or finds in its test paths) is a module of
tests, one per case, run as ``keep test`` runs them.

A failing case shows the diff of what was expected and what happened; a malformed
case file is one collection error naming the field. The runtime is imported only
when a case file is collected, so the plugin costs nothing elsewhere.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from keep_sdk.errors import ConfigurationError

if TYPE_CHECKING:
    from keep_sdk.cases import Case, CaseFile

__all__ = ["CASE_SUFFIX", "KeepCaseFile", "KeepCaseItem", "pytest_collect_file"]

CASE_SUFFIX = ".keep.yaml"


def pytest_collect_file(parent: pytest.Collector, file_path: Path) -> pytest.Collector | None:
    """Collect `file_path` when it is a ``*.keep.yaml`` case file."""
    if file_path.name.endswith(CASE_SUFFIX):
        collected: KeepCaseFile = KeepCaseFile.from_parent(parent, path=file_path)
        return collected
    return None


class KeepCaseFile(pytest.File):
    """A case file: one test item per case."""

    def collect(self) -> Iterator[pytest.Item]:
        from keep_sdk.cases import load_case_file, workflow_source

        try:
            cases = load_case_file(self.path)
            script, source = workflow_source(self.path, cases)
        except ConfigurationError as exc:
            raise self.CollectError(str(exc)) from None
        for case in cases.cases:
            yield KeepCaseItem.from_parent(
                self, name=case.name, case=case, cases=cases, source=source, script=script
            )


class KeepCaseItem(pytest.Item):
    """One case of a workflow's case file."""

    def __init__(
        self,
        *,
        case: Case,
        cases: CaseFile,
        source: str,
        script: Path,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        self.case = case
        self.cases = cases
        self.source = source
        self.script = script

    def runtest(self) -> None:
        """Run the case; fail with its diff when an expectation does not hold."""
        from keep_sdk.cases import run_case

        try:
            result = run_case(self.source, self.case, self.cases, filename=self.script.name)
        except ConfigurationError as exc:
            pytest.fail(str(exc), pytrace=False)
        if not result.ok:
            pytest.fail(f"case {self.case.name!r} failed:\n{result.report()}", pytrace=False)

    def reportinfo(self) -> tuple[Path, int, str]:
        """Where the case is, for pytest's report."""
        return self.path, 0, f"keep case: {self.case.name}"
