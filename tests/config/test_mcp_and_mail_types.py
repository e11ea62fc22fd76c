"""MCP servers and mail are keep.toml connector types like HTTP and SQL."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from click.testing import CliRunner

from keep_sdk.cli import cli
from tests.connectors.mcp.servers import SERVER

TOKEN = "mcp-token-5b1e0c7d"
PASSWORD = "smtp-password-93ae"


def config(tmp_path: Path, extra: str = "") -> Path:
    path = tmp_path / "keep.toml"
    path.write_text(
        f"""
[connectors.notes]
type = "mcp"
command = {json.dumps(sys.executable)}
args = [{json.dumps(str(SERVER))}, {json.dumps(str(tmp_path / "notes.json"))}]
env = {{ NOTES_TOKEN = "${{NOTES_TOKEN}}" }}
reconcile_tool = "find_by_key"

[connectors.post]
type = "mail"
from_address = "keep@example.com"
smtp_host = "127.0.0.1"
smtp_port = 2525
security = "none"
username = "keep"
password = "${{SMTP_PASSWORD}}"
{extra}"""
    )
    return path


def keep(path: Path, *args: str) -> object:
    env = {"NOTES_TOKEN": TOKEN, "SMTP_PASSWORD": PASSWORD}
    return CliRunner().invoke(cli, ["--config", str(path), *args], env=env)


def test_configured_mcp_tools_and_mail_operations_are_listed_without_secrets(
    tmp_path: Path,
) -> None:
    result = keep(config(tmp_path), "connectors", "--format", "json")
    assert result.exit_code == 0, result.output
    listed = {c["name"]: c for c in json.loads(result.output)["connectors"]}
    assert {"notes", "post"} <= set(listed)
    assert "send" in {o["name"] for o in listed["post"]["operations"]}
    assert listed["notes"]["operations"], "the MCP server's tools became operations"
    shown = keep(config(tmp_path), "config", "--json")
    assert shown.exit_code == 0, shown.output
    for output in (result.output, shown.output):
        assert TOKEN not in output
        assert PASSWORD not in output


def test_a_bad_mail_setting_is_one_message_naming_the_key(tmp_path: Path) -> None:
    path = config(tmp_path).read_text().replace("smtp_port = 2525", "smtp_port = 99999")
    bad = tmp_path / "bad.toml"
    bad.write_text(path)
    result = keep(bad, "connectors")
    assert result.exit_code == 2
    assert "connectors.post.smtp_port" in result.output
    assert str(bad) in result.output
