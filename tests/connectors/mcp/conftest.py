from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from keep_sdk.connectors.mcp import McpConnector, McpSettings, build
from tests.connectors.mcp.servers import http_server, stdio_settings


@pytest.fixture
def state(tmp_path: Path) -> Path:
    return tmp_path / "notes.json"


@pytest.fixture(params=["stdio", "http"])
def transport(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def server_settings(transport: str, state: Path) -> Iterator[McpSettings]:
    """Settings of a running notes server over each transport, reconciled by find_by_key."""
    options = {"reconcile_tool": "find_by_key", "call_timeout_s": 5.0}
    if transport == "stdio":
        yield stdio_settings(state, **options)
        return
    with http_server(state) as url:
        yield McpSettings(url=url, **options)


@pytest.fixture
def notes_connector(server_settings: McpSettings) -> Iterator[McpConnector]:
    connector = build("notes", server_settings)
    yield connector
    connector.close()
