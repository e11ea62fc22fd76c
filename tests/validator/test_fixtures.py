"""The fixture corpus: invalid scripts report exactly their marked diagnostics, valid ones none.

Each line of an invalid fixture that must get diagnostics ends with
``// expect: rule-id[, rule-id...]``; a fixture must report exactly those
rules on exactly those lines. esprima (an ES2017 parser) is an independent
oracle for syntax where its grammar applies.
"""

from __future__ import annotations

import re
from pathlib import Path

import esprima
import pytest

from keep_sdk import validate
from keep_sdk.validator import analyze
from keep_sdk.validator.source import SourceText

FIXTURES = Path(__file__).parents[2] / "fixtures" / "workflows"
VALID = sorted((FIXTURES / "valid").glob("*.js"))
INVALID = sorted((FIXTURES / "invalid").glob("*.js"))
SPEC = Path(__file__).parents[2] / "fixtures" / "spec"
EXPECT = re.compile(r"//\s*expect:\s*([a-z0-9, -]+)$")
POST_ES2017 = re.compile(r"\?\.|\?\?|\.\.\.\s*[a-zA-Z_$]+\s*[},]|\bfor\s+await\b|#[a-zA-Z_]")


def expected(path: Path) -> set[tuple[int, str]]:
    marks: set[tuple[int, str]] = set()
    for number, line in enumerate(path.read_text().split("\n"), start=1):
        match = EXPECT.search(line.rstrip())
        if match:
            for rule in match.group(1).split(","):
                marks.add((number, rule.strip()))
    return marks


def test_corpus_is_not_empty() -> None:
    assert len(VALID) >= 5
    assert len(INVALID) >= 16


@pytest.mark.parametrize("path", INVALID, ids=lambda p: p.stem)
def test_invalid_fixture_reports_exactly_its_marks(path: Path) -> None:
    marks = expected(path)
    assert marks, f"{path.name} marks no expected diagnostic"
    report = validate(path.read_text(), filename=path.name)
    found = {(d.line, d.rule) for d in report.diagnostics}
    assert found == marks


@pytest.mark.parametrize("path", VALID, ids=lambda p: p.stem)
def test_valid_fixture_is_clean(path: Path) -> None:
    report = validate(path.read_text(), filename=path.name)
    assert report.diagnostics == []
    assert report.workflow is not None


def test_every_rule_has_an_invalid_fixture() -> None:
    from keep_sdk.validator.rules import BUILTIN_RULES

    covered = {rule for path in INVALID for _, rule in expected(path)}
    assert {rule.id for rule in BUILTIN_RULES} <= covered


def spec_examples() -> list[tuple[str, str]]:
    """The specification's workflow examples, copied into fixtures/spec (see its README)."""
    return [(path.stem, path.read_text()) for path in sorted(SPEC.glob("*.js"))]


@pytest.mark.parametrize(("name", "source"), spec_examples(), ids=lambda v: str(v)[:40])
def test_specification_examples_validate_clean(name: str, source: str) -> None:
    report = validate(source, filename=name)
    assert report.diagnostics == []


def test_specification_examples_are_in_the_fixtures() -> None:
    examples = spec_examples()
    assert len(examples) >= 2
    fixture_texts = [path.read_text() for path in VALID]
    for _, source in examples:
        assert any(source in text for text in fixture_texts)


def esprima_accepts(source: str) -> bool:
    try:
        esprima.parseModule(source)
    except esprima.Error:
        return False
    return True


def esprima_applies(source: str) -> bool:
    """Where esprima's grammar applies: ES2017 syntax, and no early error only an engine checks.

    esprima 4 parses ES2017 and does not implement every early error (a
    ``let`` declared twice, for one); those are QuickJS's to find.
    """
    if POST_ES2017.search(source) is not None:
        return False
    return all(problem.source == "parser" for problem in analyze(source).syntax)


ORACLE = [p for p in VALID + INVALID if esprima_applies(p.read_text())]


@pytest.mark.parametrize("path", ORACLE, ids=lambda p: f"{p.parent.name}/{p.stem}")
def test_esprima_agrees_on_syntax(path: Path) -> None:
    source = path.read_text()
    ours = "syntax-error" not in validate(source).rules()
    assert esprima_accepts(source) == ours


def test_esprima_oracle_covers_valid_and_invalid_fixtures() -> None:
    assert len(ORACLE) >= 8
    verdicts = {esprima_accepts(p.read_text()) for p in ORACLE}
    assert verdicts == {True, False}


def test_tree_sitter_parses_every_fixture() -> None:
    for path in VALID + INVALID:
        assert SourceText.parse(path.read_text()).root.type == "program"
