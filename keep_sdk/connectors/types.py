"""The built-in connector types of ``keep.toml``: ``type = "…"`` → (settings model, factory).

The built-in plugin returns `BUILTIN_CONNECTOR_TYPES` from its
``register_connector_types`` hook; a third-party plugin adds a type the same way.
"""

from __future__ import annotations

from typing import Any

from pydantic import model_validator

from keep_sdk.connectors import http, sql
from keep_sdk.connectors._exec_settings import ExecSettings
from keep_sdk.connectors.base import Connector
from keep_sdk.connectors.configured import ConnectorType
from keep_sdk.connectors.mail.settings import MailSettings
from keep_sdk.connectors.mcp.settings import McpSettings
from keep_sdk.connectors.secrets import Secret

__all__ = ["BUILTIN_CONNECTOR_TYPES", "ConfiguredMailSettings", "ConfiguredMcpSettings"]


def _revealed(data: Any) -> Any:
    """`data` with every `Secret` reference replaced by its value: these settings keep
    secrets as pydantic ``SecretStr``, which hides them in messages and listings."""
    if isinstance(data, Secret):
        return data.reveal()
    if isinstance(data, dict):
        return {key: _revealed(value) for key, value in data.items()}
    if isinstance(data, list):
        return [_revealed(value) for value in data]
    return data


class ConfiguredMcpSettings(McpSettings):
    """`McpSettings` as read from keep.toml (secret references resolved)."""

    @model_validator(mode="before")
    @classmethod
    def _references(cls, data: Any) -> Any:
        return _revealed(data)


class ConfiguredMailSettings(MailSettings):
    """`MailSettings` as read from keep.toml (secret references resolved)."""

    @model_validator(mode="before")
    @classmethod
    def _references(cls, data: Any) -> Any:
        return _revealed(data)


def _build_mcp(name: str, settings: McpSettings) -> Connector:
    from keep_sdk.connectors.mcp.connector import build

    return build(name, settings)


def _build_exec(name: str, settings: ExecSettings) -> Connector:
    from keep_sdk.connectors.exec_adapter import build

    return build(name, settings)


def _build_mail(name: str, settings: MailSettings) -> Connector:
    from keep_sdk.connectors.mail.connector import build

    return build(name, settings)


BUILTIN_CONNECTOR_TYPES: tuple[ConnectorType, ...] = (
    ConnectorType(
        "http", http.HttpSettings, http.build, "An HTTP API (httpx; extra keep-sdk[http])."
    ),
    ConnectorType("sql", sql.SqlSettings, sql.build, "A SQL database (SQLAlchemy)."),
    ConnectorType(
        "mcp",
        ConfiguredMcpSettings,
        _build_mcp,
        "An MCP server over stdio or streamable HTTP; its tools are operations "
        "(extra keep-sdk[mcp]).",
    ),
    ConnectorType(
        "mail", ConfiguredMailSettings, _build_mail, "A Maildir to read and SMTP to send."
    ),
    ConnectorType(
        "exec",
        ExecSettings,
        _build_exec,
        "Programs an operator lists, run as keep+exec:// adapters of durable calls.",
    ),
)
"""Connector types every installation knows, in the order ``keep config`` lists them."""
