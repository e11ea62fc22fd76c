"""`keep mcp --http` as a subprocess: streamable HTTP on 127.0.0.1, behind the token."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

pytest.importorskip(
    "mcp", reason="keep mcp needs the optional mcp extra: pip install keep-sdk[mcp]"
)

from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client

from tests.connectors.mcp.servers import free_port

ROOT = Path(__file__).parents[2]
TOKEN = "mcp-http-token-for-the-test"


@pytest.fixture(scope="module")
def folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("keep-mcp-http")


@pytest.fixture(scope="module")
def served(folder: Path) -> Iterator[str]:
    tmp_path = folder
    port = free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_", "KEEP_"))}
    env["PYTHONPATH"] = str(ROOT)
    store = f"sqlite:///{tmp_path / 'keep.db'}"
    process = subprocess.Popen(
        [
            *(sys.executable, "-m", "keep_sdk", "mcp", "--http", "--port", str(port)),
            *("--token", TOKEN, "--store", store),
        ],
        cwd=tmp_path,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    url = f"http://127.0.0.1:{port}/mcp"
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                httpx.get(url, timeout=1)
                break
            except httpx.TransportError:
                if process.poll() is not None or time.monotonic() > deadline:
                    raise AssertionError(process.stderr.read() if process.stderr else "") from None
                time.sleep(0.2)
        yield url
    finally:
        process.terminate()
        process.wait(timeout=30)
        if process.stderr is not None:
            process.stderr.close()


def test_a_request_without_the_token_is_refused(served: str) -> None:
    for headers in ({}, {"Authorization": "Bearer not-the-token-at-all"}):
        answer = httpx.post(
            served,
            json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
            headers={**headers, "Accept": "application/json, text/event-stream"},
            timeout=10,
        )
        assert answer.status_code == 401, answer.text


def test_a_client_with_the_token_lists_the_tools_and_validates(served: str, tmp_path: Path) -> None:
    script = (ROOT / "fixtures" / "workflows" / "demo" / "invoices.js").read_text()
    (tmp_path / "invoices.js").write_text(script)

    async def steps() -> None:
        headers = {"Authorization": f"Bearer {TOKEN}"}
        async with (
            httpx.AsyncClient(headers=headers, timeout=30) as client,
            streamable_http_client(served, http_client=client) as (read, write, _),
            ClientSession(read, write) as session,
        ):
            await session.initialize()
            tools = {tool.name for tool in (await session.list_tools()).tools}
            assert {"validate", "connectors", "run_cases", "status", "deploy"} <= tools
            paths = [str(tmp_path / "invoices.js")]
            answer = await session.call_tool("validate", {"paths": paths})
            assert not answer.isError, answer.content
            assert answer.structuredContent is not None
            assert answer.structuredContent["errorCount"] == 0

    asyncio.run(steps())
