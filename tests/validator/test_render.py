"""Text, JSON and SARIF renderings of reports."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pytest

from keep_sdk.validator import (
    ReportSet,
    render_json,
    render_sarif,
    render_text,
    sarif_log,
    validate,
)
from keep_sdk.validator.rules import BUILTIN_RULES

ROOT = Path(__file__).parents[2]
SARIF_SCHEMA = json.loads((Path(__file__).parent / "data" / "sarif-schema-2.1.0.json").read_text())
PUBLISHED_SCHEMA = ROOT / "docs" / "validator-report.schema.json"
BAD = ROOT / "fixtures" / "workflows" / "invalid" / "multiple_mutations.js"


@pytest.fixture(scope="module")
def reports() -> list:
    paths = sorted((ROOT / "fixtures" / "workflows").glob("*/*.js"))
    return [validate(path.read_text(), filename=str(path.relative_to(ROOT))) for path in paths]


def test_text_is_compiler_style_with_caret_and_hint() -> None:
    source = BAD.read_text()
    report = validate(source, filename="multiple_mutations.js")
    text = render_text(report, source)
    first = report.diagnostics[0]
    lines = text.split("\n")
    assert lines[0].startswith(
        f"multiple_mutations.js:{first.line}:{first.column}: error[{first.rule}] {first.message}"
    )
    source_line = source.split("\n")[first.line - 1]
    assert lines[1].endswith(source_line)
    caret = lines[2].split("| ", 1)[1]
    assert caret.index("^") == first.column - 1
    assert lines[3] == f"  hint: {first.hint}"


def test_json_output_matches_the_published_schema(reports: list) -> None:
    data = json.loads(render_json(reports))
    schema = ReportSet.json_schema()
    jsonschema.validate(data, schema)
    assert data["errorCount"] == sum(len(r.errors) for r in reports)
    assert data["formatVersion"] == 2
    assert json.loads(PUBLISHED_SCHEMA.read_text()) == schema, (
        "docs/validator-report.schema.json is stale; regenerate it with "
        "python -c 'import json, keep_sdk.validator as v; "
        "print(json.dumps(v.ReportSet.json_schema(), indent=2))'"
    )


def test_json_round_trips(reports: list) -> None:
    again = ReportSet.model_validate_json(render_json(reports))
    assert again.reports == reports


def test_sarif_is_valid_sarif_2_1_0(reports: list) -> None:
    log = json.loads(render_sarif(reports, BUILTIN_RULES, version="1.2.3"))
    jsonschema.validate(log, SARIF_SCHEMA)
    run = log["runs"][0]
    rules = run["tool"]["driver"]["rules"]
    assert [r["id"] for r in rules] == [rule.id for rule in BUILTIN_RULES]
    assert all(r["help"]["text"] and r["fullDescription"]["text"] for r in rules)
    results = run["results"]
    assert len(results) == sum(len(r.diagnostics) for r in reports)
    for result in results:
        assert rules[result["ruleIndex"]]["id"] == result["ruleId"]


def test_sarif_schema_rejects_a_broken_log(reports: list) -> None:
    log = sarif_log(reports, BUILTIN_RULES)
    log["runs"][0]["results"][0]["level"] = "fatal"
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(log, SARIF_SCHEMA)
