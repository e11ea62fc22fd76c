"""The built-in connector types of ``keep.toml``: ``type = "…"`` → (settings model, factory).

The built-in plugin returns `BUILTIN_CONNECTOR_TYPES` from its
``register_connector_types`` hook; a third-party plugin adds a type the same way.
"""

from __future__ import annotations

from keep_sdk.connectors import http, sql
from keep_sdk.connectors.configured import ConnectorType

__all__ = ["BUILTIN_CONNECTOR_TYPES"]

BUILTIN_CONNECTOR_TYPES: tuple[ConnectorType, ...] = (
    ConnectorType(
        "http", http.HttpSettings, http.build, "An HTTP API (httpx; extra keep-sdk[http])."
    ),
    ConnectorType("sql", sql.SqlSettings, sql.build, "A SQL database (SQLAlchemy)."),
    # SLOT mcp: ConnectorType("mcp", mcp.McpSettings, mcp.build, "...") from
    #   keep_sdk/connectors/mcp/ (wired by the lead at merge).
    # SLOT mail: ConnectorType("mail", mail.MailSettings, mail.build, "...") from
    #   keep_sdk/connectors/mail/ (wired by the lead at merge).
)
"""Connector types every installation knows, in the order ``keep config`` lists them."""
