"""Start the test notes MCP server over stdio or streamable HTTP, and read what it holds."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from keep_sdk.connectors.mcp import McpSettings

SERVER = Path(__file__).with_name("notes_server.py")


def stdio_settings(state: Path, variant: str = "base", **options: Any) -> McpSettings:
    """Settings that start the notes server as a child process over stdio."""
    args = [str(SERVER), str(state), "--variant", variant]
    return McpSettings(command=sys.executable, args=args, **options)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


@contextmanager
def http_server(
    state: Path, variant: str = "base", port: int | None = None, token: str | None = None
) -> Iterator[str]:
    """Run the notes server over streamable HTTP on 127.0.0.1; yield its MCP URL. With
    `token`, the server answers 401 to a request without ``Authorization: Bearer <token>``."""
    port = port or free_port()
    log = state.with_name(state.name + ".http.log").open("w")
    guard = ["--token", token] if token else []
    process = subprocess.Popen(
        [
            sys.executable,
            str(SERVER),
            str(state),
            "--http",
            str(port),
            "--variant",
            variant,
            *guard,
        ],
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
                break
            except OSError:
                if process.poll() is not None or time.monotonic() > deadline:
                    message = f"the HTTP MCP server did not start (exit {process.poll()})"
                    raise RuntimeError(message) from None
                time.sleep(0.05)
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        process.terminate()
        try:
            process.wait(10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        log.close()


def notes(state: Path) -> list[dict[str, Any]]:
    """The notes the server holds now (it writes them before answering)."""
    if not state.exists():
        return []
    found: list[dict[str, Any]] = json.loads(state.read_text())["notes"]
    return found


def set_fault(state: Path, fault: str) -> None:
    """Make the server's next add_note call fail with `fault`."""
    state.with_name(state.name + ".fault").write_text(fault)
