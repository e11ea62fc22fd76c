"""``keep mcp``: keep as an MCP server, for LLM clients that write and repair workflows.

The tools validate a script, list the connectors, run a script's ``*.keep.yaml`` cases,
replay it against a store's recorded runs, diff two versions, deploy (only when the
`Workspace` allows it; never granting) and report the status; the resources are the
validator's rules, the case format and the connector declarations (JSON and a ``.d.ts``).
Every tool works on the same `keep_sdk.app.Installation` as the ``keep`` commands.
Needs the ``mcp`` extra (``pip install 'keep-sdk[mcp]'``).
"""

from __future__ import annotations

from keep_sdk.mcp_server._server import build_server, serve_http, serve_stdio
from keep_sdk.mcp_server._workspace import Workspace

__all__ = ["Workspace", "build_server", "serve_http", "serve_stdio"]
