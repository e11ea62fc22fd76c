"""`keep migrate` / `migrate()`: scripts in the original product's format become this SDK's.

The fixtures in fixtures/legacy are written from the format's description (section 2
of the keepai reference notes the project was given). A migrated script must validate clean,
or the validator must report exactly what the TODO lines say is left.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner
from hypothesis import given, settings
from hypothesis import strategies as st

from keep_sdk import validate
from keep_sdk.cli import cli
from keep_sdk.validator.migrate import migrate
from keep_sdk.validator.migrate.rewrite import TODO

ROOT = Path(__file__).parents[2]
LEGACY = sorted((ROOT / "fixtures" / "legacy").glob("*.js"))
LEGACY_MARKS = ("Gmail", "Topics", "const workflow")
CURRENT = sorted(
    path
    for path in (ROOT / "fixtures" / "workflows").glob("*/*.js")
    if not any(mark in path.read_text() for mark in LEGACY_MARKS)
)
"""Fixtures in this SDK's format; those (even half) in the original one are migrated by
design and are covered by the LEGACY tests."""
TODO_WINDOW = 3
"""An error left must be on one of the lines just below its TODO (the statement it is about)."""


def test_there_are_at_least_eight_legacy_scripts() -> None:
    assert len(LEGACY) >= 8
    assert len(CURRENT) >= 25


@pytest.mark.parametrize("path", LEGACY, ids=lambda p: p.stem)
def test_the_original_script_is_refused_as_legacy_format(path: Path) -> None:
    report = validate(path.read_text(), filename=path.name)
    assert "legacy-format" in {d.rule for d in report.errors}


@pytest.mark.parametrize("path", LEGACY, ids=lambda p: p.stem)
def test_the_migrated_script_is_clean_or_reports_exactly_what_the_todos_say(path: Path) -> None:
    migration = migrate(path.read_text(), name=path.stem)
    report = validate(migration.source, filename=path.name)
    lines = migration.source.split("\n")
    todo_lines = [n for n, line in enumerate(lines, start=1) if TODO in line]
    assert [note.line for note in migration.notes if note.todo] == todo_lines
    todo_lines = [note.line for note in migration.notes if note.todo and not note.review]
    assert "syntax-error" not in {d.rule for d in report.diagnostics}
    assert report.workflow is not None
    error_lines = {d.line for d in report.errors}
    for line in error_lines:
        assert any(0 < line - todo <= TODO_WINDOW for todo in todo_lines), (
            f"{path.name}:{line} has an error no TODO announces: "
            + "; ".join(f"{d.line} {d.rule}: {d.message}" for d in report.errors)
        )
    for todo in todo_lines:
        assert any(0 < line - todo <= TODO_WINDOW for line in error_lines), (
            f"{path.name}:{todo}: a TODO whose problem the validator does not report"
        )


@pytest.mark.parametrize("path", LEGACY, ids=lambda p: p.stem)
def test_migrating_twice_changes_nothing_more(path: Path) -> None:
    once = migrate(path.read_text(), name=path.stem)
    twice = migrate(once.source, name=path.stem)
    assert twice.source == once.source
    assert not twice.changed
    assert [n.message for n in twice.notes if n.todo] == [n.message for n in once.notes if n.todo]


def test_a_fully_mapped_script_is_rewritten_call_by_call() -> None:
    source = (ROOT / "fixtures" / "legacy" / "01_email_to_sheet.js").read_text()
    migrated = migrate(source, name="invoices").source
    assert migrated.count("export default Keep.workflow(") == 1
    assert 'name: "invoices",' in migrated
    assert "handler: async (ctx, state) =>" in migrated
    assert "ctx.gmail.search({ query: " in migrated
    assert 'ctx.peek("invoice.received", { limit: 1 })' in migrated
    assert "ctx.sheets.appendRow({ spreadsheetId: " in migrated
    assert "record: Keep.consumer({" in migrated
    for old in ("Topics.", "Gmail.", "GoogleSheets.", "const workflow"):
        assert old not in migrated
    assert validate(migrated).errors == []


@pytest.mark.parametrize("path", CURRENT, ids=lambda p: f"{p.parent.name}/{p.stem}")
def test_scripts_already_in_this_format_are_left_alone(path: Path) -> None:
    source = path.read_text()
    migration = migrate(source)
    assert migration.source == source
    assert not migration.changed


@settings(max_examples=200, deadline=None)
@given(st.text(alphabet=st.characters(codec="utf-8"), max_size=300))
def test_migrate_never_raises_and_leaves_text_without_the_old_format_unchanged(text: str) -> None:
    migration = migrate(text)
    if "workflow" not in text and "Topics" not in text and ".api" not in text:
        assert migration.source == text


def keep(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(cli, ["migrate", *args])
    return result.exit_code, result.stdout, result.stderr


def test_cli_prints_the_migrated_script_and_exits_0_when_it_validates_clean() -> None:
    code, out, err = keep(str(ROOT / "fixtures" / "legacy" / "02_reply_methods.js"))
    assert code == 0
    assert out.startswith("// Original product format")
    assert "reply: Keep.consumer({" in out
    assert "migrated script validates clean" in err


def test_cli_exits_1_and_names_each_todo_when_work_is_left() -> None:
    path = ROOT / "fixtures" / "legacy" / "05_unmapped_tool.js"
    code, out, err = keep(str(path))
    assert code == 1
    assert TODO in out
    assert "TODO(migrate): `Weather.api` method 'forecast' has no connector operation" in err
    assert "error[legacy-format]" in err


def test_cli_json_is_one_document_with_source_notes_and_report() -> None:
    import json

    code, out, _ = keep(str(ROOT / "fixtures" / "legacy" / "03_register_input.js"), "--json")
    assert code == 1
    document = json.loads(out)
    assert document["changed"] is True
    assert [n["todo"] for n in document["notes"]] == [True]
    assert {d["rule"] for d in document["report"]["diagnostics"]} >= {"legacy-format"}


def test_cli_refuses_a_missing_file_with_exit_2() -> None:
    code, _, err = keep(str(ROOT / "fixtures" / "legacy" / "no_such_script.js"))
    assert code == 2
    assert "is not a file" in err
