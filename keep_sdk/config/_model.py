"""The pydantic models of ``keep.toml`` (docs/configuration.md documents each field)."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator

__all__ = ["ConnectorEntry", "KeepConfigFile", "WorkflowSettings"]

_NAME_HINT = "a JS identifier starting with a lowercase letter, such as 'crm'"


class _Table(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, arbitrary_types_allowed=True)


class ConnectorEntry(_Table):
    """``[connectors.<name>]``: ``type`` picks the settings model; the rest are its settings."""

    model_config = ConfigDict(extra="allow", frozen=True, arbitrary_types_allowed=True)

    type: str = Field(description='The connector type: "http", "sql", "mcp", "mail", ...')

    def settings(self) -> dict[str, Any]:
        """The table without ``type``: what the type's settings model validates."""
        return dict(self.model_extra or {})


class WorkflowSettings(_Table):
    """``[workflows.<name>]``: what differs for one workflow."""

    policy: dict[str, Any] = Field(
        default_factory=dict,
        description="HostPolicy fields overriding [policy] for this workflow.",
    )


class KeepConfigFile(_Table):
    """The whole file, before connector settings and policies are checked by their models."""

    secrets_file: str | None = Field(
        default=None,
        description='A TOML file of NAME = "value" secrets (mode 0600), relative to keep.toml.',
    )
    policy: dict[str, Any] = Field(
        default_factory=dict, description="HostPolicy fields for every workflow."
    )
    workflows: dict[str, WorkflowSettings] = Field(
        default_factory=dict, description="Per-workflow overrides, by workflow name."
    )
    connectors: dict[str, ConnectorEntry] = Field(
        default_factory=dict, description="Connector instances, by the name scripts call."
    )

    @field_validator("connectors")
    @classmethod
    def _names(cls, value: dict[str, ConnectorEntry]) -> dict[str, ConnectorEntry]:
        import re

        for name in value:
            if not re.match(r"^[a-z][A-Za-z0-9]*$", name):
                raise ValueError(f"connector name {name!r} must be {_NAME_HINT}")
        return value
