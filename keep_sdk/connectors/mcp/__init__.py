"""The MCP connector: an MCP server (stdio or streamable HTTP) whose tools are operations.

Needs the ``mcp`` extra (``pip install keep-sdk[mcp]``).
"""

from keep_sdk.connectors.mcp.connector import McpConnector, build
from keep_sdk.connectors.mcp.link import META_KEY
from keep_sdk.connectors.mcp.settings import McpSettings, McpToolSettings
from keep_sdk.connectors.mcp.tools import js_name

__all__ = ["META_KEY", "McpConnector", "McpSettings", "McpToolSettings", "build", "js_name"]
