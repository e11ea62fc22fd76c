"""The README's test command, which CI runs, runs every test: the slow ones too."""

import re
import tomllib
from pathlib import Path

ROOT = Path(__file__).parents[1]


def test_no_pytest_option_deselects_tests_by_default() -> None:
    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text())
    options = pyproject["tool"]["pytest"]["ini_options"]
    assert not [o for o in options["addopts"] if o.startswith(("-m", "-k", "--deselect"))]
    assert any(marker.startswith("slow:") for marker in options["markers"])


def test_ci_runs_the_test_script_which_passes_no_selection_of_its_own() -> None:
    ci = (ROOT / ".ci" / "run").read_text()
    assert re.search(r"^bash scripts/test\.sh$", ci, re.M)
    script = (ROOT / "scripts" / "test.sh").read_text()
    commands = [line for line in script.splitlines() if "pytest" in line and line[:1] != "#"]
    assert len(commands) == 1
    assert re.fullmatch(r'exec \.venv/bin/python -m pytest (--durations=\d+ )?"\$@"', commands[0])


def test_the_readme_tells_how_to_run_the_fast_subset() -> None:
    assert 'bash scripts/test.sh -m "not slow"' in (ROOT / "README.md").read_text()
