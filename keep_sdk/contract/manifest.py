"""What scripts can call: the connector manifest the validator, sandbox and prompts read."""

from __future__ import annotations

import json
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from keep_sdk.contract.results import EVENT_SCHEMA
from keep_sdk.errors import UnknownConnector, UnknownOperation
from keep_sdk.model import OperationKind

__all__ = ["ConnectorManifest", "DurableDeclaration", "Manifest", "OperationManifest"]


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class DurableDeclaration(_Frozen):
    """How a durable operation is started and waited for (002 §3): frozen with each version."""

    key_fields: list[str] = Field(
        default_factory=list,
        description="Argument fields that join the correlation key (idempotency key_fields).",
    )
    timeout: str | None = Field(
        default=None, description="Park timeout as an ISO 8601 duration (P14D); None: none."
    )


class OperationManifest(_Frozen):
    """One operation: ``ctx.<connector>.<name>(arguments)``."""

    name: str = Field(description="JS name, as the script calls it.")
    kind: OperationKind
    permission: str = Field(description="Permission a workflow needs granted to call it.")
    description: str = ""
    arguments: dict[str, Any] = Field(description="JSON Schema of the one argument object.")
    result: dict[str, Any] | None = Field(
        default=None,
        description="JSON Schema of what the call returns to the script (for a durable "
        "operation: the result it completes with); None: not declared.",
    )
    reconcilable: bool = Field(
        default=False, description="Mutations only: the host can check an uncertain outcome."
    )
    durable: DurableDeclaration | None = Field(
        default=None,
        description="Durable operations only: key fields and park timeout. None in manifests "
        "recorded before they were frozen (the connector's current declaration applies).",
    )


class ConnectorManifest(_Frozen):
    """One connector and its operations, sorted by name."""

    name: str
    description: str = ""
    operations: list[OperationManifest]

    def operation(self, name: str) -> OperationManifest:
        """The operation called `name`; `UnknownOperation` lists the known ones."""
        for op in self.operations:
            if op.name == name:
                return op
        known = ", ".join(o.name for o in self.operations) or "none"
        raise UnknownOperation(
            f"connector {self.name!r} has no operation {name!r}; it offers: {known}",
            connector=self.name,
            operation=name,
        )


class Manifest(_Frozen):
    """Every connector a script may use, sorted by name."""

    connectors: list[ConnectorManifest] = Field(default_factory=list)
    origin: str | None = Field(
        default=None,
        exclude=True,
        description="Where the configured connectors come from, for diagnostics about an "
        "unknown connector: which keep.toml was read and why, or where none was found. "
        "Never serialised.",
    )

    def connector(self, name: str) -> ConnectorManifest:
        """The connector called `name`; `UnknownConnector` lists the known ones."""
        for connector in self.connectors:
            if connector.name == name:
                return connector
        known = ", ".join(c.name for c in self.connectors) or "none"
        raise UnknownConnector(
            f"there is no connector {name!r}; registered connectors: {known}",
            connector=name,
        )

    def operation(self, connector: str, name: str) -> OperationManifest:
        """Shortcut for ``connector(connector).operation(name)``."""
        return self.connector(connector).operation(name)

    def names(self) -> list[str]:
        """Connector names."""
        return [c.name for c in self.connectors]

    def to_text(self) -> str:
        """A short listing for people: one line per operation."""
        lines: list[str] = []
        for connector in self.connectors:
            lines.append(f"{connector.name}: {connector.description}".rstrip(": "))
            for op in connector.operations:
                extra = ", reconcilable" if op.reconcilable else ""
                lines.append(
                    f"  ctx.{connector.name}.{op.name}({_signature(op)})  "
                    f"[{op.kind.value}, needs {op.permission}{extra}]"
                )
        return "\n".join(lines)

    def to_markdown(self) -> str:
        """A reference meant to be pasted into an LLM prompt: kinds, permissions, schemas."""
        lines = [
            "# Connectors available to workflow scripts",
            "",
            "Call them as `await ctx.<connector>.<operation>({...})` with ONE object argument.",
            "Kinds: `read` and `read_by_id` are allowed in producer handlers and `prepare`;",
            "a `mutation` is allowed only in `mutate`, at most once, as its last statement,",
            "and its return value is not available there (use `mutationResult` in `next`).",
            "Under each operation, `Returns` is the JSON Schema of what the call resolves to",
            "(for a mutation or a durable operation: `mutationResult.result` in `next`).",
            "`ctx.peek(topic)` and `ctx.getByIds(topic, ids)` resolve to an array of events:",
            "",
            "```json",
            json.dumps(EVENT_SCHEMA, indent=2, sort_keys=True),
            "```",
            "",
        ]
        for connector in self.connectors:
            lines += [f"## `ctx.{connector.name}`", ""]
            if connector.description:
                lines += [connector.description, ""]
            for op in connector.operations:
                lines += [
                    f"### `ctx.{connector.name}.{op.name}({_signature(op)})`",
                    "",
                    f"- kind: `{op.kind.value}`",
                    f"- permission: `{op.permission}`",
                ]
                if op.kind is OperationKind.MUTATION:
                    lines.append(f"- reconcilable: {'yes' if op.reconcilable else 'no'}")
                if op.description:
                    lines.append(f"- {op.description}")
                lines += [
                    "",
                    "Arguments:",
                    "",
                    "```json",
                    json.dumps(op.arguments, indent=2, sort_keys=True),
                    "```",
                    "",
                ]
                if op.result is not None:
                    lines += [
                        "Returns:",
                        "",
                        "```json",
                        json.dumps(op.result, indent=2, sort_keys=True),
                        "```",
                        "",
                    ]
        return "\n".join(lines).rstrip() + "\n"


def _signature(op: OperationManifest) -> str:
    properties = op.arguments.get("properties", {})
    required = set(op.arguments.get("required", []))
    fields = [name if name in required else f"{name}?" for name in properties]
    return "{" + ", ".join(fields) + "}" if fields else "{}"
