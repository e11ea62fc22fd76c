"""Every relative path in keep.toml is relative to the file's folder, so the same installation
works from any working folder: an MCP server started by a relative script, a SQLite file, a
Maildir. The commands run as real `python -m keep_sdk` processes in another folder."""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from keep_sdk.config import load_config
from keep_sdk.connectors.mail.settings import MailSettings
from keep_sdk.connectors.mcp import McpSettings
from keep_sdk.connectors.sql import SqlSettings
from keep_sdk.connectors.types import BUILTIN_CONNECTOR_TYPES
from tests.connectors.mcp.servers import SERVER

TYPES = {t.name: t for t in BUILTIN_CONNECTOR_TYPES}
NOTE = {"id": "n1", "text": "written before keep started", "key": "k1"}


def keep(cwd: Path, config: Path, *args: str) -> subprocess.CompletedProcess[str]:
    environ = {k: v for k, v in os.environ.items() if k != "KEEP_CONFIG"}
    return subprocess.run(
        [sys.executable, "-m", "keep_sdk", "--config", str(config), *args],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        cwd=cwd,
        env=environ,
    )


def installation(tmp_path: Path, table: str, state: str) -> tuple[Path, Path]:
    """An installation folder with the notes MCP server as servers/notes.py and bin/notes,
    its state (one note) at `state` inside it, and keep.toml holding `table`; and an
    unrelated working folder."""
    folder = tmp_path / "installation"
    (folder / "servers").mkdir(parents=True)
    (folder / "bin").mkdir()
    shutil.copy(SERVER, folder / "servers" / "notes.py")
    program = folder / "bin" / "notes"
    program.write_text(f"#!{sys.executable}\n" + SERVER.read_text())
    program.chmod(0o755)
    (folder / state).parent.mkdir(parents=True, exist_ok=True)
    (folder / state).write_text(json.dumps({"notes": [NOTE], "calls": 0}))
    (folder / "keep.toml").write_text(table)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    return folder, elsewhere


@pytest.mark.parametrize(
    ("table", "state"),
    [
        (
            f'command = {json.dumps(sys.executable)}\nargs = ["servers/notes.py", "notes.json"]',
            "notes.json",
        ),
        ('command = "bin/notes"\nargs = ["data/notes.json"]', "data/notes.json"),
        ('command = "./bin/notes"\ncwd = "data"\nargs = ["notes.json"]', "data/notes.json"),
    ],
    ids=["script-argument", "program-path", "program-path-and-cwd"],
)
def test_an_mcp_server_declared_with_relative_paths_starts_from_any_working_folder(
    tmp_path: Path, table: str, state: str
) -> None:
    config_text = f'[connectors.notes]\ntype = "mcp"\n{table}\n'
    config, elsewhere = installation(tmp_path, config_text, state)
    listed = keep(elsewhere, config / "keep.toml", "connectors", "--format", "json")
    assert listed.returncode == 0, listed.stdout + listed.stderr
    [notes] = [c for c in json.loads(listed.stdout)["connectors"] if c["name"] == "notes"]
    assert {"searchNotes", "addNote", "findByKey"} <= {o["name"] for o in notes["operations"]}
    found = keep(elsewhere, config / "keep.toml", "call", "notes.searchNotes", '{"query": ""}')
    assert found.returncode == 0, found.stdout + found.stderr
    assert NOTE["text"] in found.stdout, "the server read the state file next to keep.toml"
    assert not (elsewhere / "notes.json").exists()
    assert not (elsewhere / "data").exists()


def test_a_sqlite_file_is_found_next_to_keep_toml_from_any_working_folder(
    tmp_path: Path,
) -> None:
    folder = tmp_path / "installation"
    (folder / "data").mkdir(parents=True)
    with sqlite3.connect(folder / "data" / "orders.db") as db:
        db.execute("CREATE TABLE orders (id TEXT PRIMARY KEY, status TEXT)")
        db.execute("INSERT INTO orders VALUES ('o-17', 'open')")
    (folder / "keep.toml").write_text(
        '[connectors.orders]\ntype = "sql"\nurl = "sqlite:///data/orders.db"\n'
        '[connectors.orders.operations.openOrders]\nkind = "read"\n'
        "sql = \"SELECT id FROM orders WHERE status = 'open'\"\n"
    )
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    done = keep(elsewhere, folder / "keep.toml", "call", "orders.openOrders", "{}")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "o-17" in done.stdout
    assert not (elsewhere / "data").exists()


_SEGMENT = st.text(alphabet="abcxyz019_-", min_size=1, max_size=8)


@given(parts=st.lists(_SEGMENT, min_size=1, max_size=4), dots=st.sampled_from(["", "./"]))
def test_mail_folders_and_files_resolve_against_the_folder_of_keep_toml(
    parts: list[str], dots: str
) -> None:
    folder = Path("/srv/keep/site")
    relative = dots + "/".join(parts)
    settings = MailSettings(
        from_address="keep@example.org",
        smtp_host="127.0.0.1",
        maildir=relative,
        sent_maildir="/var/mail/sent",
        ca_file="~/ca.pem",
    ).resolved_against(folder)
    assert settings.maildir == str(folder.joinpath(*parts))
    assert settings.sent_maildir == "/var/mail/sent"
    assert settings.ca_file == str(Path.home() / "ca.pem")


def test_an_mcp_program_name_stays_a_path_lookup_and_the_server_runs_in_the_folder() -> None:
    folder = Path("/srv/keep/site")
    bare = McpSettings(command="npx", args=["./server.js"]).resolved_against(folder)
    assert (bare.command, bare.args, bare.cwd) == ("npx", ["./server.js"], "/srv/keep/site")
    placed = McpSettings(command="../bin/x", cwd="/opt/run").resolved_against(folder)
    assert (placed.command, placed.cwd) == ("/srv/keep/bin/x", "/opt/run")
    remote = McpSettings(url="http://127.0.0.1:9/mcp")
    assert remote.resolved_against(folder) is remote


@pytest.mark.parametrize(
    ("url", "expected"),
    [
        ("sqlite:///orders.db", "sqlite:////srv/keep/site/orders.db"),
        ("sqlite+pysqlite:///../db/o.db?timeout=5", "sqlite+pysqlite:////srv/keep/db/o.db?timeout=5"),
        ("sqlite:////var/o.db", "sqlite:////var/o.db"),
        ("sqlite://", "sqlite://"),
        ("sqlite:///:memory:", "sqlite:///:memory:"),
        ("postgresql+psycopg://app@db.example/orders", "postgresql+psycopg://app@db.example/orders"),
    ],
)  # fmt: skip
def test_only_a_sqlite_file_in_a_database_url_is_a_path(url: str, expected: str) -> None:
    settings = SqlSettings.model_validate(
        {"url": url, "operations": {"all": {"kind": "read", "sql": "SELECT 1"}}}
    )
    assert settings.resolved_against(Path("/srv/keep/site")).revealed_url() == expected


def test_a_sqlite_url_from_a_secret_reference_resolves_and_stays_a_secret(
    tmp_path: Path,
) -> None:
    (tmp_path / "keep.toml").write_text(
        '[connectors.orders]\ntype = "sql"\nurl = "${ORDERS_URL}"\n'
        '[connectors.orders.operations.all]\nkind = "read"\nsql = "SELECT 1"\n'
    )
    config = load_config(
        tmp_path / "keep.toml", types=TYPES, environ={"ORDERS_URL": "sqlite:///o.db"}
    )
    settings = config.connectors["orders"].settings
    assert isinstance(settings, SqlSettings)
    assert settings.revealed_url() == f"sqlite:///{tmp_path / 'o.db'}"
    assert "o.db" not in str(settings.url)
