"""keep test: YAML cases run on the real runtime and sandbox against recording doubles."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner
from hypothesis import given, settings
from hypothesis import strategies as st

from keep_sdk.cases import is_subset
from keep_sdk.cli import cli
from keep_sdk.errors import ConfigurationError
from keep_sdk.repair import parse_case_file, run_case_file

ROOT = Path(__file__).parents[2]
DEMO_DIR = ROOT / "fixtures" / "workflows" / "demo"
CASES = DEMO_DIR / "invoices.keep.yaml"


def keep(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(cli, list(args))
    return result.exit_code, result.stdout, result.stderr


@pytest.fixture
def demo_copy(tmp_path: Path) -> Path:
    shutil.copy(DEMO_DIR / "invoices.js", tmp_path / "invoices.js")
    shutil.copy(CASES, tmp_path / "invoices.keep.yaml")
    return tmp_path


def test_the_demo_cases_pass(demo_copy: Path) -> None:
    code, out, err = keep("test", str(demo_copy / "invoices.keep.yaml"))
    assert code == 0, out + err
    assert "7 passed, 0 failed" in out
    assert sorted(p.name for p in demo_copy.iterdir()) == ["invoices.js", "invoices.keep.yaml"]


def test_json_gives_every_case_with_what_the_runs_did(demo_copy: Path) -> None:
    name = "an invoice email becomes a row and a summary"
    code, out, _ = keep("test", str(demo_copy / "invoices.keep.yaml"), name, "--json")
    assert code == 0
    [case] = json.loads(out)
    assert case["name"] == name
    assert case["ok"] is True
    assert [m["call"] for m in case["mutations"]] == ["sheets.appendRow", "slack.postMessage"]
    assert case["runs"] == {"committed": 3}


def test_changed_arguments_fail_with_a_diff_of_the_arguments(demo_copy: Path) -> None:
    script = demo_copy / "invoices.js"
    swapped = "invoice.amount, invoice.subject]"
    script.write_text(script.read_text().replace("invoice.subject, invoice.amount]", swapped))
    code, out, _ = keep("test", str(demo_copy / "invoices.keep.yaml"))
    assert code == 1
    assert "FAIL  an invoice email becomes a row and a summary" in out
    assert '-        "Invoice INV-1",' in out
    assert '+        "1,250.00 EUR",' in out
    assert "pass  mail that is not an invoice adds nothing" in out
    code, out, _ = keep("test", str(demo_copy / "invoices.keep.yaml"), "--json")
    failed = [c for c in json.loads(out) if not c["ok"]]
    assert {m["what"] for c in failed for m in c["mismatches"]} == {"mutations"}


def test_a_script_the_validator_rejects_fails_every_case_with_its_message(
    demo_copy: Path,
) -> None:
    script = demo_copy / "invoices.js"
    script.write_text(script.read_text().replace("ctx.sheets.appendRow", "ctx.sheets.apendRow"))
    results = run_case_file(demo_copy / "invoices.keep.yaml")
    assert all(not r.ok for r in results)
    assert all("apendRow" in r.mismatches[0].diff for r in results)


def test_a_typo_in_a_case_file_is_one_message_with_a_did_you_mean(demo_copy: Path) -> None:
    path = demo_copy / "invoices.keep.yaml"
    path.write_text(path.read_text().replace("      mutations:", "      mutatons:", 1))
    code, out, err = keep("test", str(path))
    assert code == 2
    assert err.count("error:") == 1
    assert "expect.mutatons` is not a known field; did you mean `mutations`?" in err
    assert "an invoice email becomes a row and a summary" in err
    assert "Traceback" not in out + err


def test_an_unknown_case_name_and_a_missing_script_are_usage_errors(demo_copy: Path) -> None:
    code, _, err = keep("test", str(demo_copy / "invoices.keep.yaml"), "mail that is not")
    assert code == 2
    assert "no case named 'mail that is not'" in err
    (demo_copy / "invoices.js").unlink()
    code, _, err = keep("test", str(demo_copy / "invoices.keep.yaml"))
    assert code == 2
    assert "cannot read the workflow 'invoices.js'" in err


_FIELDS = {
    (): ["workflow", "grants", "connectors", "cases"],
    ("cases", 0): ["name", "connectors", "grants", "steps", "expect"],
    ("cases", 0, "expect"): ["mutations", "publishes", "state", "runs"],
}


@settings(max_examples=40, deadline=None)
@given(where=st.sampled_from(sorted(_FIELDS)), data=st.data())
def test_any_field_misspelt_by_one_dropped_letter_is_named_with_its_correction(
    where: tuple[Any, ...], data: st.DataObject
) -> None:
    document: dict[str, Any] = {
        "workflow": "invoices.js",
        "cases": [{"name": "c", "expect": {"runs": {"committed": 1}}}],
    }
    field = data.draw(st.sampled_from(_FIELDS[where]))
    cut = data.draw(st.integers(min_value=0, max_value=len(field) - 1))
    typo = field[:cut] + field[cut + 1 :]
    node: Any = document
    for part in where:
        node = node[part]
    node.pop(field, None)
    node[typo] = [] if field in ("grants", "cases", "steps", "mutations", "publishes") else {}
    if typo in _FIELDS[where]:
        return
    with pytest.raises(ConfigurationError) as raised:
        parse_case_file(yaml.safe_dump(document), name="t.keep.yaml")
    message = str(raised.value)
    assert f"{typo}` is not a known field" in message
    assert f"did you mean `{field}`?" in message


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=5),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=3), inner),
    max_leaves=12,
)


@settings(max_examples=80, deadline=None)
@given(value=json_values, data=st.data())
def test_a_subset_of_an_object_matches_it_and_a_changed_value_does_not(
    value: Any, data: st.DataObject
) -> None:
    assert is_subset(value, value)
    actual = {"k": value, "other": 1}
    assert is_subset({"k": value}, actual)
    assert not is_subset({"k": value, "missing": None}, actual)
    scalar = st.none() | st.booleans() | st.integers() | st.text(max_size=5)
    changed = data.draw(scalar.filter(lambda v: v != value or type(v) is not type(value)))
    assert not is_subset({"k": changed}, actual)
    if isinstance(value, list):
        assert not is_subset({"k": [*value, changed]}, actual)


def test_pytest_collects_keep_yaml_files_and_shows_the_diff(
    pytester: pytest.Pytester, demo_copy: Path
) -> None:
    shutil.copy(demo_copy / "invoices.js", pytester.path / "invoices.js")
    text = CASES.read_text()
    (pytester.path / "invoices.keep.yaml").write_text(text)
    broken = text.replace("{summariesPosted: 1}", "{summariesPosted: 2}", 1)
    (pytester.path / "broken.keep.yaml").write_text(broken)
    result = pytester.runpytest("-q")
    result.assert_outcomes(passed=13, failed=1)
    result.stdout.fnmatch_lines(["*state.postSummary*", '*-  "summariesPosted": 2*'])
