"""The foundation commands: --version, connectors, schema, call."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from click.testing import CliRunner

from keep_sdk.cli import cli


def keep(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(cli, list(args))
    return result.exit_code, result.stdout, result.stderr


def test_version_from_the_installed_console_script() -> None:
    out = subprocess.run(
        [sys.executable, "-m", "keep_sdk", "--version"],
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    ).stdout
    assert out.startswith("keep, version ")


def test_connectors_json_is_the_manifest() -> None:
    code, out, _ = keep("connectors", "--format", "json")
    assert code == 0
    manifest = json.loads(out)
    names = {c["name"]: [op["name"] for op in c["operations"]] for c in manifest["connectors"]}
    assert names == {
        "approvals": ["request"],
        "gmail": ["getById", "search", "send"],
        "jobs": ["submit"],
        "sheets": ["appendRow", "getRow", "listRows", "updateRow"],
        "slack": ["postMessage"],
    }


def test_connectors_markdown_gives_kind_permission_and_schema() -> None:
    code, out, _ = keep("connectors", "gmail.send", "--format", "markdown")
    assert code == 0
    assert "### `ctx.gmail.send({to, subject, body, cc?, inReplyTo?})`" in out
    assert "- kind: `mutation`" in out
    assert "- permission: `gmail.send`" in out
    assert '"inReplyTo"' in out


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["connectors", "--format", "xml"], "'xml' is not one of"),
        (
            ["connectors", "gmial"],
            "there is no connector 'gmial'; registered connectors: approvals, gmail",
        ),
        (["connectors", "gmail.sned"], "has no operation 'sned'; it offers: getById, search, send"),
        (["connectors", "--colour"], "No such option '--colour'"),
        (["schema", "Nope"], "no model named 'Nope'"),
        (["call", "sheets", "{}"], "expected CONNECTOR.OPERATION"),
        (["call", "sheets.listRows", "{oops"], "not valid JSON"),
    ],
)
def test_usage_errors_exit_2_with_a_clear_message(args: list[str], message: str) -> None:
    code, _, err = keep(*args)
    assert code == 2
    assert message in err
    assert "Traceback" not in err


def test_invalid_arguments_are_rendered_readably_and_exit_1() -> None:
    code, _, err = keep("call", "sheets.appendRow", '{"spreadsheetId": 3, "colour": "red"}')
    assert code == 1
    assert err.splitlines() == [
        "error: invalid arguments of ctx.sheets.appendRow:",
        "  `spreadsheetId`: Input should be a valid string (got 3)",
        "  `values` is required but missing",
        "  `colour` is not a known field; remove it",
    ]


def test_call_runs_a_read_and_only_checks_a_mutation() -> None:
    code, out, _ = keep("call", "gmail.search", '{"query": "invoice"}')
    assert (code, json.loads(out)) == (0, [])
    code, out, _ = keep("call", "slack.postMessage", '{"channel": "#a", "text": "hi"}')
    assert code == 0
    assert "a mutation: it runs only in a workflow's mutate phase" in out


def test_schema_prints_one_or_all_models() -> None:
    code, out, _ = keep("schema", "PrepareResult")
    assert code == 0
    assert "wakeAt" in json.loads(out)["properties"]
    code, out, _ = keep("schema")
    assert "HostPolicy" in json.loads(out)
