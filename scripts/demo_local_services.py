"""The local-services demo: a workflow over a real MCP server, HTTP API and SMTP server.

Started by ``bash scripts/demo-local-services.sh``. Every service listens on
127.0.0.1 and is stopped at the end. `connectors` builds the three connectors
from settings; the same settings are written to ``keep.toml`` in the demo folder
so that, once keep.toml loading is available, the demo can load them from there.
"""

from __future__ import annotations

import json
import mailbox
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Any

import httpx
import uvicorn
from aiosmtpd.controller import Controller
from pydantic import BaseModel, ConfigDict

from keep_sdk import TransientError
from keep_sdk.connectors import Connector, ConnectorSet, operation
from keep_sdk.connectors.mail import MailSettings
from keep_sdk.connectors.mail import build as build_mail
from keep_sdk.connectors.mcp import McpConnector, McpSettings
from keep_sdk.connectors.mcp import build as build_mcp
from keep_sdk.model import OperationKind, RunStatus
from keep_sdk.plugins import KeepPlugins
from keep_sdk.runtime import Runtime
from keep_sdk.stores import open_store

ROOT = Path(__file__).resolve().parents[1]
SERVICES = ROOT / "fixtures" / "demo-services"
sys.path.insert(0, str(SERVICES))

from status_api import make_app  # noqa: E402


class NoArguments(BaseModel):
    model_config = ConfigDict(extra="forbid")


class StatusApi(Connector):
    """The status page's HTTP API (a plain connector over httpx)."""

    name = "status"

    def __init__(self, base_url: str) -> None:
        self.client = httpx.Client(base_url=base_url, timeout=10.0)

    @operation(
        kind=OperationKind.READ, permission="status.read", args=NoArguments, name="listIncidents"
    )
    def list_incidents(self, args: NoArguments) -> Any:
        """Open incidents: {incidents: [{id, service, summary, severity}]}."""
        try:
            response = self.client.get("/incidents")
            response.raise_for_status()
        except httpx.HTTPError as exc:
            raise TransientError(f"ctx.status.listIncidents: {exc}") from None
        return response.json()


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def wait_for(port: int, process: subprocess.Popen[bytes] | None = None) -> None:
    deadline = time.monotonic() + 30
    while True:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
            return
        except OSError:
            if (process is not None and process.poll() is not None) or time.monotonic() > deadline:
                raise SystemExit(f"a demo service did not start on port {port}") from None
            time.sleep(0.05)


@contextmanager
def mcp_server(folder: Path) -> Iterator[str]:
    port = free_port()
    process = subprocess.Popen(
        [sys.executable, str(SERVICES / "tickets_mcp.py"), str(folder / "tickets.json"), str(port)],
        stderr=(folder / "tickets-mcp.log").open("wb"),
    )
    try:
        wait_for(port, process)
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        process.terminate()
        process.wait(10)


@contextmanager
def http_api() -> Iterator[str]:
    port = free_port()
    server = uvicorn.Server(
        uvicorn.Config(make_app(), host="127.0.0.1", port=port, log_level="warning")
    )
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    try:
        wait_for(port)
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(10)


class SentFolder:
    """aiosmtpd handler: files every accepted message in a Maildir, like a Sent folder."""

    def __init__(self, path: Path) -> None:
        self.maildir = mailbox.Maildir(path, create=True)

    async def handle_DATA(self, server: Any, session: Any, envelope: Any) -> str:
        self.maildir.add(envelope.original_content or b"")
        return "250 Message accepted"


@contextmanager
def smtp_server(sent: Path) -> Iterator[int]:
    port = free_port()
    controller = Controller(SentFolder(sent), hostname="127.0.0.1", port=port)
    controller.start()
    try:
        yield port
    finally:
        controller.stop()


def settings(mcp_url: str, smtp_port: int, sent: Path) -> tuple[McpSettings, MailSettings]:
    tickets = McpSettings(url=mcp_url, reconcile_tool="find_by_key")
    mail = MailSettings(
        from_address="keep@example.org",
        smtp_host="127.0.0.1",
        smtp_port=smtp_port,
        security="none",
        sent_maildir=str(sent),
    )
    return tickets, mail


def keep_toml(tickets: McpSettings, mail: MailSettings, api_url: str) -> str:
    """The same connectors as a keep.toml (for the configuration loader)."""
    return "\n".join(
        [
            "[connectors.tickets]",
            'type = "mcp"',
            f'url = "{tickets.url}"',
            f'reconcile_tool = "{tickets.reconcile_tool}"',
            "",
            "[connectors.mail]",
            'type = "mail"',
            f'from_address = "{mail.from_address}"',
            f'smtp_host = "{mail.smtp_host}"',
            f"smtp_port = {mail.smtp_port}",
            f'security = "{mail.security}"',
            f'sent_maildir = "{mail.sent_maildir}"',
            "",
            "# status: a plain connector in this demo (an HTTP connector once configured)",
            f'# base_url = "{api_url}"',
            "",
        ]
    )


def run(folder: Path) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    sent = folder / "Sent"
    with ExitStack() as stack:
        mcp_url = stack.enter_context(mcp_server(folder))
        api_url = stack.enter_context(http_api())
        smtp_port = stack.enter_context(smtp_server(sent))
        print(f"MCP server   {mcp_url}")
        print(f"HTTP API     {api_url}")
        print(f"SMTP server  127.0.0.1:{smtp_port}")
        tickets_settings, mail_settings = settings(mcp_url, smtp_port, sent)
        (folder / "keep.toml").write_text(keep_toml(tickets_settings, mail_settings, api_url))
        tickets: McpConnector = stack.enter_context(build_mcp("tickets", tickets_settings))
        connectors = ConnectorSet([tickets, build_mail("mail", mail_settings), StatusApi(api_url)])
        store = open_store(f"sqlite:///{folder / 'keep.db'}")
        runtime = Runtime(
            store, connectors, load_workflow=KeepPlugins(load_entry_points=False).load_workflow
        )
        print("\n== deploy the workflow (validated against the three connectors) ==")
        version = runtime.deploy((SERVICES / "incidents.js").read_text())
        for permission in ("status.read", "tickets.write", "mail.send"):
            store.grant_permission("incidents", permission, actor="demo")
        print(f"incidents v{version}; granted status.read, tickets.write, mail.send")
        print("\n== run until idle ==")
        runs = [runtime.run_producer("incidents", "pollStatus")]
        for consumer, topic in (
            ("openTicket", "incident.reported"),
            ("mailOnCall", "ticket.opened"),
        ):
            while store.pending_events("incidents", topic, limit=1):
                runs.append(runtime.run_consumer("incidents", consumer))
        for record in runs:
            print(f"  {record.handler:<11} {record.status.value}")
        failed = [r for r in runs if r.status is not RunStatus.COMMITTED]
        print("\n== what each service received ==")
        received = httpx.get(f"{api_url}/_received").json()["requests"]
        print(f"HTTP API:    {json.dumps(received)}")
        for ticket in json.loads((folder / "tickets.json").read_text()):
            print(
                f"MCP tickets: {ticket['id']} {ticket['title']!r} ({ticket['severity']}), "
                f"key {ticket['key']}"
            )
        for message in mailbox.Maildir(sent, create=False):
            print(
                f"SMTP:        to {message['To']}: {message['Subject']!r} {message['Message-ID']}"
            )
        store.close()
    print("\nservices stopped")
    if failed:
        raise SystemExit(f"{len(failed)} run(s) did not commit")


if __name__ == "__main__":
    run(Path(sys.argv[1]) if len(sys.argv) > 1 else ROOT / ".keep" / "demo-services")
