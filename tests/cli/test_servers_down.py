"""With a keep.toml MCP server down, looking still works and only the runs that call it wait.

A real SQLite store, the real notes MCP server (a child process over stdio, or
streamable HTTP on 127.0.0.1) and the `keep` commands: the server is up while the
workflow is deployed and a first run commits, then it goes down.
"""

from __future__ import annotations

import json
import shutil
import sys
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest

from keep_sdk.app import Installation
from keep_sdk.console import ConsoleSettings, create_app
from keep_sdk.model import RunStatus
from tests.cli.terminal import keep
from tests.connectors.mcp.flow import NOTES_FLOW, request_note
from tests.connectors.mcp.servers import SERVER, free_port, http_server, notes
from tests.console.server import served

TOKEN = "console-token-for-servers-down"


@dataclass
class Service:
    """The notes server a keep.toml names, which a test takes down and brings back."""

    transport: str
    root: Path
    stack: ExitStack

    @property
    def state(self) -> Path:
        return self.root / "notes.json"

    @property
    def url(self) -> str:
        return f"sqlite:///{self.root / 'keep.db'}"

    def configure(self) -> None:
        if self.transport == "stdio":
            where = (
                f"command = {json.dumps(sys.executable)}\n"
                f"args = [{json.dumps(str(self.root / 'server.py'))}, "
                f"{json.dumps(str(self.state))}]"
            )
        else:
            self.port = free_port()
            where = f'url = "http://127.0.0.1:{self.port}/mcp"'
        (self.root / "keep.toml").write_text(
            f'[connectors.notes]\ntype = "mcp"\n{where}\ncall_timeout_s = 10.0\n'
            'reconcile_tool = "find_by_key"\n'
        )

    def up(self) -> None:
        if self.transport == "stdio":
            shutil.copy(SERVER, self.root / "server.py")
        else:
            self.running = ExitStack()
            self.running.enter_context(http_server(self.state, port=self.port))
            self.stack.callback(self.running.close)

    def down(self) -> None:
        if self.transport == "stdio":
            (self.root / "server.py").unlink()
        else:
            self.running.close()

    @property
    def reason(self) -> str:
        return (
            "could not start the MCP server"
            if self.transport == "stdio"
            else (f"could not reach the MCP server http://127.0.0.1:{self.port}/mcp")
        )


@contextmanager
def installation(service: Service) -> Iterator[Installation]:
    inst = Installation.open(service.url, isolation="in-process")
    try:
        yield inst
    finally:
        inst.close()


@pytest.fixture(params=["stdio", "http"])
def service(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Service]:
    """A store whose notes-flow committed one run while the server was up; now it is down."""
    with ExitStack() as stack:
        found = Service(str(request.param), tmp_path, stack)
        found.configure()
        found.up()
        with installation(found) as inst:
            inst.runtime.deploy(NOTES_FLOW)
            for permission in ("notes.read", "notes.write"):
                inst.store.grant_permission("notes-flow", permission, actor="test")
            request_note(inst.store, "r1", "buy milk")
            run = inst.runtime.run_consumer("notes-flow", "addNote")
            assert run.status is RunStatus.COMMITTED, run.error
        found.down()
        yield found


@pytest.mark.parametrize(
    ("command", "shown"),
    [
        ("status", "notes-flow"),
        ("runs", "addNote"),
        ("ledger", "notes.addNote"),
        ("events", "Note r1"),
    ],
)
def test_looking_at_the_store_starts_no_server(service: Service, command: str, shown: str) -> None:
    result = keep(command, "--store", service.url)
    assert result.code == 0, result.err
    assert shown in result.out
    assert "could not" not in result.out + result.err


def test_the_console_overview_is_served_while_the_server_is_down(service: Service) -> None:
    app = create_app(ConsoleSettings(store_url=service.url, token=TOKEN, isolation="in-process"))
    with served(app) as base, httpx.Client(base_url=base, timeout=60) as http:
        assert http.get(f"/login?token={TOKEN}").status_code == 303
        page = http.get("/")
        assert page.status_code == 200
        assert "notes-flow" in page.text
        bearer = {"Authorization": f"Bearer {TOKEN}"}
        assert http.get("/api/status", headers=bearer).status_code == 200


def test_a_run_calling_the_down_server_waits_and_a_later_one_succeeds(service: Service) -> None:
    with installation(service) as inst:
        request_note(inst.store, "r2", "call mum")
        waiting = inst.runtime.run_consumer("notes-flow", "addNote")
        assert waiting.status is RunStatus.PAUSED_TRANSIENT
        assert service.reason in (waiting.error or "")
        status = keep("status", "--store", service.url)
        assert status.code == 0, status.err
        service.up()
        resumed = inst.runtime.resume(waiting.id)
        assert resumed.status is RunStatus.COMMITTED, resumed.error
    assert [n["text"] for n in notes(service.state)] == ["buy milk", "call mum"]


def test_a_person_grants_a_permission_the_workflow_uses_while_the_server_is_down(
    service: Service,
) -> None:
    with installation(service) as inst:
        inst.store.revoke_permission("notes-flow", "notes.write", actor="test")
    granted = keep("grant", "notes-flow", "notes.write", "--store", service.url)
    assert granted.code == 0, granted.err
    assert "granted notes.write to notes-flow" in granted.out
    typo = keep("grant", "notes-flow", "notes.wrte", "--store", service.url)
    assert typo.code != 0
    assert "could not" in typo.err
    with installation(service) as inst:
        assert "notes.write" in inst.store.get_workflow("notes-flow").grants
