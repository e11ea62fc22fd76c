"""The settings models of the built-in keep.toml connector types that resolve secret
references themselves, imported only when keep.toml names their type."""

from __future__ import annotations

from typing import Any

from pydantic import model_validator

from keep_sdk.connectors.mail.settings import MailSettings
from keep_sdk.connectors.mcp.settings import McpSettings
from keep_sdk.connectors.secrets import Secret

__all__ = ["ConfiguredMailSettings", "ConfiguredMcpSettings"]


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
