"""``keep validate``: exit codes, inputs (files, directories, stdin) and formats."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from click.testing import CliRunner

from keep_sdk.cli import cli

FIXTURES = Path(__file__).parents[2] / "fixtures" / "workflows"
VALID = FIXTURES / "valid" / "spec_06a_email_to_sheets.js"
INVALID = FIXTURES / "invalid" / "code_after_mutation.js"
WARNINGS = FIXTURES / "invalid" / "nondeterministic_mutate.js"


def keep(*args: str, stdin: str | None = None) -> tuple[int, str, str]:
    result = CliRunner().invoke(cli, ["validate", *args], input=stdin)
    return result.exit_code, result.stdout, result.stderr


def test_valid_file_exits_0() -> None:
    code, out, _ = keep(str(VALID))
    assert code == 0
    assert "no problems" in out


def test_invalid_file_exits_1_with_location_rule_caret_and_hint() -> None:
    code, out, _ = keep(str(INVALID))
    assert code == 1
    assert f"{INVALID}:15:9: error[code-after-mutation]" in out
    assert '        console.log("reply handled");' in out
    assert "  hint: Make `ctx.gmail.send(...)` the last statement" in out
    assert "^^^^" in out


def test_warnings_alone_exit_0() -> None:
    code, out, _ = keep(str(WARNINGS))
    assert code == 0
    assert "warning[nondeterministic-mutate]" in out


def test_directory_validates_every_js_file(tmp_path: Path) -> None:
    (tmp_path / "nested").mkdir()
    (tmp_path / "nested" / "a.js").write_text(VALID.read_text())
    (tmp_path / "b.js").write_text(INVALID.read_text())
    (tmp_path / "notes.txt").write_text("not a script")
    code, out, _ = keep("--format", "json", str(tmp_path))
    assert code == 1
    files = [report["file"] for report in json.loads(out)["reports"]]
    assert files == [str(tmp_path / "b.js"), str(tmp_path / "nested" / "a.js")]


def test_stdin() -> None:
    code, out, err = keep("-", stdin=INVALID.read_text())
    assert code == 1, err
    assert out.startswith("-:15:9: error[code-after-mutation]")


def test_missing_file_is_a_usage_error() -> None:
    code, _, err = keep("does-not-exist.js")
    assert code == 2
    assert err.startswith("error: does-not-exist.js does not exist")
    assert "Traceback" not in err


def test_empty_directory_is_a_usage_error(tmp_path: Path) -> None:
    code, _, err = keep(str(tmp_path))
    assert code == 2
    assert "contains no .js files" in err


def test_non_utf8_file_is_a_usage_error(tmp_path: Path) -> None:
    path = tmp_path / "latin1.js"
    path.write_bytes(b"const caf\xe9 = 1;\n")
    code, _, err = keep(str(path))
    assert code == 2
    assert "is not UTF-8 text" in err


def test_no_path_is_a_usage_error() -> None:
    code, _, _ = keep()
    assert code == 2


def test_unknown_format_is_a_usage_error() -> None:
    code, _, _ = keep("--format", "xml", str(VALID))
    assert code == 2


def test_sarif_output_lists_the_rules() -> None:
    code, out, _ = keep("--format", "sarif", str(INVALID))
    assert code == 1
    log = json.loads(out)
    assert log["version"] == "2.1.0"
    assert log["runs"][0]["results"][0]["ruleId"] == "code-after-mutation"


def test_mutate_reads_policy_option(tmp_path: Path) -> None:
    script = (FIXTURES / "invalid" / "phase_forbidden_call.js").read_text()
    path = tmp_path / "p.js"
    path.write_text(script)
    _, default, _ = keep("--format", "json", str(path))
    _, by_id, _ = keep("--format", "json", "--mutate-reads", "by_id", str(path))
    count = len(json.loads(default)["reports"][0]["diagnostics"])
    assert len(json.loads(by_id)["reports"][0]["diagnostics"]) == count - 1


def test_console_script_runs_as_a_subprocess() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "keep_sdk", "validate", str(INVALID)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 1
    assert "error[code-after-mutation]" in done.stdout


def test_pre_commit_hook_runs_keep_validate() -> None:
    import yaml

    hooks = yaml.safe_load((Path(__file__).parents[2] / ".pre-commit-hooks.yaml").read_text())
    [hook] = hooks
    assert hook["id"] == "keep-validate"
    assert hook["entry"] == "keep validate"
    assert hook["language"] == "python"
    assert "javascript" in hook["types"]


def test_json_is_camel_case_and_matches_keep_schema_output_validate() -> None:
    import re

    import jsonschema

    code, out, _ = keep("--format", "json", str(FIXTURES / "invalid" / "multiple_mutations.js"))
    assert code == 1
    document = json.loads(out)
    keys: set[str] = set()
    stack: list[object] = [document]
    while stack:
        value = stack.pop()
        if isinstance(value, dict):
            keys |= set(value)
            stack.extend(value.values())
        elif isinstance(value, list):
            stack.extend(value)
    assert not [key for key in keys if re.search(r"[a-z0-9]_[a-z]", key)]
    assert {"formatVersion", "errorCount", "endLine", "related", "defaultExport"} <= keys
    schema = CliRunner().invoke(cli, ["schema", "--output", "validate"])
    assert schema.exit_code == 0, schema.output
    jsonschema.validate(document, json.loads(schema.stdout))
