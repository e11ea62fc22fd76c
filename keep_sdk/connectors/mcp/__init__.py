"""The MCP connector: an MCP server (stdio or streamable HTTP) whose tools are operations.

Needs the ``mcp`` extra (``pip install keep-sdk[mcp]``). `McpSettings` loads
without it (``keep.toml`` is checked before anything connects); the connector
itself imports the SDK on first use.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from keep_sdk.connectors.mcp.settings import McpSettings, McpToolSettings

if TYPE_CHECKING:
    from keep_sdk.connectors.mcp._link import META_KEY
    from keep_sdk.connectors.mcp.connector import McpConnector, build
    from keep_sdk.connectors.mcp.tools import js_name

__all__ = ["META_KEY", "McpConnector", "McpSettings", "McpToolSettings", "build", "js_name"]

_LAZY = {
    "McpConnector": "keep_sdk.connectors.mcp.connector",
    "build": "keep_sdk.connectors.mcp.connector",
    "META_KEY": "keep_sdk.connectors.mcp._link",
    "js_name": "keep_sdk.connectors.mcp.tools",
}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        import importlib

        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
