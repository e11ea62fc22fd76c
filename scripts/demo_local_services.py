"""The local-services demo: a workflow over a real MCP server, HTTP API and SMTP server.

Started by ``bash scripts/demo-local-services.sh``. Every service listens on
127.0.0.1 and is stopped at the end. The three connectors are declared in
``keep.toml`` next to the demo's store (the HTTP API's token as ``${STATUS_TOKEN}``),
and the workflow runs through the ``keep run`` command, exactly as a user would run it.
"""

from __future__ import annotations

import json
import mailbox
import os
import secrets
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

ROOT = Path(__file__).resolve().parents[1]
SERVICES = ROOT / "fixtures" / "demo-services"
sys.path.insert(0, str(SERVICES))

from status_api import make_app  # noqa: E402

GRANTS = ("status.read", "tickets.write", "mail.send")


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
    with (folder / "tickets-mcp.log").open("wb") as log:
        process = subprocess.Popen(
            [
                sys.executable,
                str(SERVICES / "tickets_mcp.py"),
                str(folder / "tickets.json"),
                str(port),
            ],
            stderr=log,
        )
        try:
            wait_for(port, process)
            yield f"http://127.0.0.1:{port}/mcp"
        finally:
            process.terminate()
            process.wait(10)


@contextmanager
def http_api(token: str) -> Iterator[str]:
    port = free_port()
    server = uvicorn.Server(
        uvicorn.Config(make_app(token), host="127.0.0.1", port=port, log_level="warning")
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


def keep_toml(mcp_url: str, api_url: str, smtp_port: int, sent: Path) -> str:
    """The three connectors of the demo; the API token is a secret reference."""
    return f"""\
# The demo's services, all on 127.0.0.1 (written by scripts/demo_local_services.py).

[connectors.status]
type = "http"
description = "The status page's API."
base_url = "{api_url}"
headers = {{ Authorization = "Bearer ${{STATUS_TOKEN}}" }}

[connectors.status.operations.listIncidents]
kind = "read"
path = "/incidents"
description = "Open incidents: {{incidents: [{{id, service, summary, severity}}]}}."

[connectors.tickets]
type = "mcp"
url = "{mcp_url}"
reconcile_tool = "find_by_key"

[connectors.mail]
type = "mail"
from_address = "keep@example.org"
smtp_host = "127.0.0.1"
smtp_port = {smtp_port}
security = "none"
sent_maildir = "{sent}"
"""


def keep(folder: Path, token: str, *args: str) -> subprocess.CompletedProcess[str]:
    """The ``keep`` command line on the demo's store (keep.toml is found next to it)."""
    env = {**os.environ, "STATUS_TOKEN": token}
    env.pop("KEEP_CONFIG", None)
    return subprocess.run(
        [sys.executable, "-m", "keep_sdk", *args, "--store", f"sqlite:///{folder / 'keep.db'}"],
        capture_output=True,
        text=True,
        env=env,
        check=False,
    )


def run(folder: Path) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    sent = folder / "Sent"
    token = secrets.token_urlsafe(16)
    with ExitStack() as stack:
        mcp_url = stack.enter_context(mcp_server(folder))
        api_url = stack.enter_context(http_api(token))
        smtp_port = stack.enter_context(smtp_server(sent))
        print(f"MCP server   {mcp_url}")
        print(f"HTTP API     {api_url}")
        print(f"SMTP server  127.0.0.1:{smtp_port}")
        (folder / "keep.toml").write_text(keep_toml(mcp_url, api_url, smtp_port, sent))
        print(f"\n== {folder / 'keep.toml'} declares the three connectors ==")
        listings = [
            keep(folder, token, "connectors", name) for name in ("status", "tickets", "mail")
        ]
        for listed in listings:
            print(listed.stdout.rstrip() or listed.stderr.rstrip())
        grants = [arg for grant in GRANTS for arg in ("--grant", grant)]
        print(f"\n== keep run incidents.js {' '.join(grants)} --until-idle ==")
        ran = keep(folder, token, "run", str(SERVICES / "incidents.js"), *grants, "--until-idle")
        print(ran.stdout.rstrip())
        if ran.stderr.strip():
            print(ran.stderr.rstrip(), file=sys.stderr)
        print("\n== what each service received ==")
        received = httpx.get(f"{api_url}/_received").json()["requests"]
        print(f"HTTP API:    {json.dumps(received)}")
        tickets_file = folder / "tickets.json"
        for ticket in json.loads(tickets_file.read_text()) if tickets_file.exists() else []:
            print(
                f"MCP tickets: {ticket['id']} {ticket['title']!r} ({ticket['severity']}), "
                f"key {ticket['key']}"
            )
        for message in sorted(mailbox.Maildir(sent, create=False), key=lambda m: m["Subject"]):
            print(
                f"SMTP:        to {message['To']}: {message['Subject']!r} {message['Message-ID']}"
            )
    print("\nservices stopped")
    failed = [p.returncode for p in (*listings, ran) if p.returncode != 0]
    if failed:
        raise SystemExit(f"keep exited {failed[0]}")


if __name__ == "__main__":
    run(Path(sys.argv[1]) if len(sys.argv) > 1 else ROOT / ".keep" / "demo-services")
