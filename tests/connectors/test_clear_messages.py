"""At the command line, a missing server, a refused connection and a wrong password are each
one clear message: one ``error:`` line naming the connector, the server and what to check,
never a traceback or the secret. ``keep call`` runs a read against the real service."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from keep_sdk.conformance.postgres import PostgresServer
from tests.connectors.http_service import running_service
from tests.connectors.mcp.servers import free_port, http_server

SECRET = "s3cret-Value-8831"
HTTP = """
[connectors.crm]
type = "http"
base_url = "{url}"
headers = {{ Authorization = "Bearer ${{SECRET}}" }}

[connectors.crm.operations.getContact]
kind = "read_by_id"
path = "/contacts/{{id}}"
arguments = {{ properties = {{ id = {{ type = "string" }} }}, required = ["id"] }}
"""
SQL = """
[connectors.orders]
type = "sql"
url = "{url}"

[connectors.orders.operations.count]
kind = "read"
sql = "SELECT 1 AS one"
"""
MCP_URL = """
[connectors.notes]
type = "mcp"
url = "{url}"
headers = {{ Authorization = "Bearer ${{SECRET}}" }}
connect_timeout_s = 5
"""
MCP_COMMAND = """
[connectors.notes]
type = "mcp"
command = "{command}"
connect_timeout_s = 5
"""
MAIL = """
[connectors.mail]
type = "mail"
from_address = "keep@example.org"
smtp_host = "127.0.0.1"
maildir = "{maildir}"
"""


def keep_call(tmp_path: Path, config: str, *call: str) -> subprocess.CompletedProcess[str]:
    (tmp_path / "keep.toml").write_text(config)
    env = {**os.environ, "KEEP_CONFIG": str(tmp_path / "keep.toml"), "SECRET": SECRET}
    return subprocess.run(
        [sys.executable, "-m", "keep_sdk", "call", *call],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        cwd=tmp_path,
        env=env,
    )


def assert_one_message(done: subprocess.CompletedProcess[str], *expected: str) -> None:
    assert done.returncode == 1, done.stdout + done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    assert lines[0].startswith("error: "), done.stderr
    for part in expected:
        assert part in lines[0]
    assert SECRET not in done.stdout + done.stderr


def test_http_refused_connection(tmp_path: Path) -> None:
    url = f"http://127.0.0.1:{free_port()}"
    done = keep_call(tmp_path, HTTP.format(url=url), "crm.getContact", '{"id": "c1"}')
    assert_one_message(
        done,
        f"ctx.crm.getContact: cannot connect to {url}/contacts/c1",
        "nothing was sent. Check that the service runs and base_url is right",
    )


def test_http_wrong_token(tmp_path: Path) -> None:
    with running_service("the-right-token") as service:
        config = HTTP.format(url=service.url)
        done = keep_call(tmp_path, config, "crm.getContact", '{"id": "c1"}')
    assert_one_message(
        done,
        "ctx.crm.getContact answered 401",
        "the service refused the token of connector 'crm'",
        "fix the token in keep.toml (or the secret it references)",
    )


def test_sql_refused_connection(tmp_path: Path) -> None:
    port = free_port()
    url = f"postgresql+psycopg://app:{SECRET}@127.0.0.1:{port}/shop"
    done = keep_call(tmp_path, SQL.format(url=url), "orders.count", "{}")
    assert_one_message(
        done,
        "ctx.orders.count: cannot connect to the database of connector 'orders'",
        f'"127.0.0.1", port {port} failed: Connection refused',
        "Check that the database runs and that url (and the secret it references) is right",
    )


@pytest.mark.postgres
def test_sql_wrong_password(tmp_path: Path, postgres_server: PostgresServer) -> None:
    url = postgres_server.create_database("orders")
    host = url.split("://", 1)[1].split("@")[-1]
    done = keep_call(
        tmp_path,
        SQL.format(url=f"postgresql+psycopg://nobody_here:{SECRET}@{host}"),
        "orders.count",
        "{}",
    )
    assert_one_message(
        done,
        "ctx.orders.count: cannot connect to the database of connector 'orders'",
        'role "nobody_here"',
        "that url (and the secret it references) is right",
    )


def test_mcp_missing_server_program(tmp_path: Path) -> None:
    missing = tmp_path / "no-such-server"
    done = keep_call(
        tmp_path, MCP_COMMAND.format(command=missing), "notes.searchNotes", '{"query": ""}'
    )
    assert_one_message(
        done,
        f"connector 'notes': could not start the MCP server {missing}",
        "check `command` and that the server runs",
    )


def test_mcp_refused_connection(tmp_path: Path) -> None:
    url = f"http://127.0.0.1:{free_port()}/mcp"
    done = keep_call(tmp_path, MCP_URL.format(url=url), "notes.searchNotes", '{"query": ""}')
    assert_one_message(
        done,
        f"connector 'notes': could not reach the MCP server {url}",
        "check `url` and that the server runs",
    )


def test_mcp_wrong_token(tmp_path: Path) -> None:
    with http_server(tmp_path / "notes.json", token="the-right-token") as url:
        config = MCP_URL.format(url=url)
        done = keep_call(tmp_path, config, "notes.searchNotes", '{"query": ""}')
    assert_one_message(
        done,
        f"connector 'notes': the MCP server {url} refused the credentials",
        "check `headers` of [connectors.notes] in keep.toml",
    )


def test_mail_missing_maildir(tmp_path: Path) -> None:
    maildir = tmp_path / "no-such-maildir"
    done = keep_call(tmp_path, MAIL.format(maildir=maildir), "mail.search", "{}")
    assert_one_message(done, "`maildir`", str(maildir), "is not a Maildir")
