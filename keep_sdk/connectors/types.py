"""The built-in connector types of ``keep.toml``: ``type = "…"`` → (settings model, factory).

The built-in plugin returns `BUILTIN_CONNECTOR_TYPES` from its
``register_connector_types`` hook; a third-party plugin adds a type the same way. Each
type's settings model and connector are imported when keep.toml names the type, so a
command that reads keep.toml loads only the connector packages it configures.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pydantic import BaseModel

from keep_sdk.connectors.configured import ConnectorType

if TYPE_CHECKING:
    from keep_sdk.connectors.base import Connector

__all__ = ["BUILTIN_CONNECTOR_TYPES"]


def _http_settings() -> type[BaseModel]:
    from keep_sdk.connectors.http import HttpSettings

    return HttpSettings


def _sql_settings() -> type[BaseModel]:
    from keep_sdk.connectors.sql import SqlSettings

    return SqlSettings


def _mcp_settings() -> type[BaseModel]:
    from keep_sdk.connectors._toml_settings import ConfiguredMcpSettings

    return ConfiguredMcpSettings


def _mail_settings() -> type[BaseModel]:
    from keep_sdk.connectors._toml_settings import ConfiguredMailSettings

    return ConfiguredMailSettings


def _exec_settings() -> type[BaseModel]:
    from keep_sdk.connectors._exec_settings import ExecSettings

    return ExecSettings


def _build_http(name: str, settings: Any) -> Connector:
    from keep_sdk.connectors.http import build

    return build(name, settings)


def _build_sql(name: str, settings: Any) -> Connector:
    from keep_sdk.connectors.sql import build

    return build(name, settings)


def _build_mcp(name: str, settings: Any) -> Connector:
    from keep_sdk.connectors.mcp.connector import build

    return build(name, settings)


def _build_exec(name: str, settings: Any) -> Connector:
    from keep_sdk.connectors.exec_adapter import build

    return build(name, settings)


def _build_mail(name: str, settings: Any) -> Connector:
    from keep_sdk.connectors.mail.connector import build

    return build(name, settings)


BUILTIN_CONNECTOR_TYPES: tuple[ConnectorType, ...] = (
    ConnectorType(
        "http", _http_settings, _build_http, "An HTTP API (httpx; extra keep-sdk[http])."
    ),
    ConnectorType("sql", _sql_settings, _build_sql, "A SQL database (SQLAlchemy)."),
    ConnectorType(
        "mcp",
        _mcp_settings,
        _build_mcp,
        "An MCP server over stdio or streamable HTTP; its tools are operations "
        "(extra keep-sdk[mcp]).",
    ),
    ConnectorType("mail", _mail_settings, _build_mail, "A Maildir to read and SMTP to send."),
    ConnectorType(
        "exec",
        _exec_settings,
        _build_exec,
        "Programs an operator lists, run as keep+exec:// adapters of durable calls.",
    ),
)
"""Connector types every installation knows, in the order ``keep config`` lists them."""
