"""A migrated script does what the original did: same events consumed, same effects.

Each ``fixtures/legacy/NN_name.expect.yaml`` is a case file written from reading the
original script (NN_name.js): seed data for the doubles and what the original
product would have done with it. The test migrates the script and plays each case
on it, on the installation's doubles. A script whose migration leaves work the
validator reports (a `TODO(migrate)` it can see) cannot run as it is: it must be
refused, never run with another meaning.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from keep_sdk import validate
from keep_sdk.cases import load_case_file, run_case
from keep_sdk.cli import cli
from keep_sdk.validator.migrate import migrate

ROOT = Path(__file__).parents[2]
LEGACY = sorted((ROOT / "fixtures" / "legacy").glob("*.js"))
EXPECTED = {
    path.name.removesuffix(".expect.yaml"): path for path in LEGACY[0].parent.glob("*.expect.yaml")
}


def test_every_expectation_names_a_legacy_script_and_the_result_shape_fixtures_have_one() -> None:
    assert set(EXPECTED) <= {path.stem for path in LEGACY}
    assert {"09_invoices_not_in_sheet", "10_destructured_results"} <= set(EXPECTED)


@pytest.mark.parametrize("path", LEGACY, ids=lambda p: p.stem)
def test_the_migrated_script_runs_as_the_original_did_or_is_refused(path: Path) -> None:
    migration = migrate(path.read_text(), name=path.stem)
    report = validate(migration.source, filename=path.name)
    if path.stem not in EXPECTED:
        assert report.errors, f"{path.name} migrates clean: write {path.stem}.expect.yaml"
        assert any(note.todo and not note.review for note in migration.notes)
        return
    assert report.errors == [], [d.message for d in report.errors]
    cases = load_case_file(EXPECTED[path.stem])
    for case in cases.cases:
        result = run_case(migration.source, case, cases, filename=path.name, isolation="in-process")
        assert result.ok, result.report()


@pytest.mark.parametrize("path", [LEGACY[0], LEGACY[-1]], ids=lambda p: p.stem)
def test_keep_migrate_writes_the_script_the_cases_ran(path: Path, tmp_path: Path) -> None:
    out = tmp_path / "migrated.js"
    result = CliRunner().invoke(cli, ["migrate", str(path), "-o", str(out), "--name", path.stem])
    assert out.read_text() == migrate(path.read_text(), name=path.stem).source
    review = any(note.review for note in migrate(path.read_text()).notes)
    assert result.exit_code == (1 if review else 0), result.stderr
