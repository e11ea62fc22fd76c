"""`McpSettings`: how to reach an MCP server and how its tools become operations."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, SecretStr, model_validator

from keep_sdk.connectors._settings import resolve_path
from keep_sdk.model import OperationKind

__all__ = ["McpSettings", "McpToolSettings"]


class _Settings(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class McpToolSettings(_Settings):
    """Overrides for one tool, keyed by the tool's name on the server."""

    kind: OperationKind | None = Field(
        default=None,
        description="The operation kind; default: `read` when the tool has readOnlyHint, "
        "else `mutation`.",
    )
    permission: str | None = Field(
        default=None,
        pattern=r"^[A-Za-z0-9_-]+\.[A-Za-z0-9_.-]+$",
        description="The permission a workflow needs; default `<name>.read` / `<name>.write`.",
    )
    name: str | None = Field(
        default=None,
        pattern=r"^[a-z][A-Za-z0-9]*$",
        description="The JS name scripts call; default: the tool name in camelCase.",
    )


class McpSettings(_Settings):
    """An MCP server over stdio (`command`) or streamable HTTP (`url`).

    Exactly one of `command` and `url` is given. `env` and `headers` values are
    secrets: they are passed to the server and never shown in errors or listings.
    """

    type: Literal["mcp"] = "mcp"
    command: str | None = Field(
        default=None,
        min_length=1,
        description="Server program (stdio): a name looked up on PATH (`python3`, `npx`), or "
        "a path (`./server.py`, `bin/notes`), relative to keep.toml's folder.",
    )
    args: list[str] = Field(
        default_factory=list,
        description="Arguments of `command`, passed as written: a relative path in them is "
        "relative to `cwd`.",
    )
    env: dict[str, SecretStr] = Field(
        default_factory=dict,
        description="Extra environment of `command` (PATH, HOME and the like are passed on).",
    )
    cwd: str | None = Field(
        default=None,
        description="Working directory of `command`, relative to keep.toml's folder; "
        "default (from keep.toml): that folder.",
    )
    url: str | None = Field(
        default=None, pattern=r"^https?://", description="Streamable HTTP endpoint."
    )
    headers: dict[str, SecretStr] = Field(
        default_factory=dict, description="HTTP headers sent with every request (`url`)."
    )
    description: str = Field(default="", description="What the connector is for, for prompts.")
    tools: dict[str, McpToolSettings] = Field(
        default_factory=dict, description="Per-tool overrides, by tool name."
    )
    reconcile_tool: str | None = Field(
        default=None,
        description="A read tool called with {idempotencyKey} that answers {applied, result}; "
        "without it an uncertain mutation goes to a person.",
    )
    call_timeout_s: Annotated[float, Field(gt=0, le=3600)] = Field(
        default=30.0,
        description="Seconds one call may take in all: (re)connecting, sending and the answer.",
    )
    connect_timeout_s: Annotated[float, Field(gt=0, le=600)] = Field(
        default=15.0,
        description="Seconds to start or reach the server and initialise the session (at most "
        "`call_timeout_s` within a call).",
    )
    max_result_bytes: Annotated[int, Field(ge=1024, le=256 * 1024 * 1024)] = Field(
        default=4 * 1024 * 1024,
        description="Most bytes of one message from the server (a call's result), counted while "
        "reading; a larger one is not kept and fails the call.",
    )

    @model_validator(mode="after")
    def _one_transport(self) -> McpSettings:
        if (self.command is None) == (self.url is None):
            raise ValueError(
                "give exactly one of `command` (a server started over stdio) and `url` "
                "(a streamable HTTP endpoint)"
            )
        return self

    def resolved_against(self, folder: Path) -> McpSettings:
        """These settings as keep.toml in `folder` means them: `cwd` resolved against `folder`
        (`folder` itself when not given), and a `command` that is a path (it has a slash)
        made absolute against `folder`; a bare program name stays a PATH lookup."""
        if self.command is None:
            return self
        command = self.command
        if "/" in command or (os.altsep is not None and os.altsep in command):
            command = resolve_path(command, folder)
        cwd = resolve_path(self.cwd, folder) if self.cwd is not None else str(folder)
        return self.model_copy(update={"command": command, "cwd": cwd})

    def where(self) -> str:
        """The server as error messages name it: the command or the URL, never a secret."""
        if self.url is not None:
            return self.url
        return " ".join([self.command or "", *self.args])
