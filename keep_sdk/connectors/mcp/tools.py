"""MCP tools as connector operations: kinds, permissions, JS names, JSON Schema arguments."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any

import jsonschema  # type: ignore[import-untyped]
from mcp.types import Tool
from pydantic import JsonValue, RootModel

from keep_sdk.connectors.mcp.settings import McpSettings, McpToolSettings
from keep_sdk.connectors.operation import Operation
from keep_sdk.contract.manifest import OperationManifest
from keep_sdk.errors import ConfigurationError, InvalidArguments
from keep_sdk.model import OperationKind

__all__ = ["RESERVED_JS_NAMES", "ToolArguments", "ToolOperation", "js_name", "tool_operations"]

_IDENTIFIER = re.compile(r"^[A-Za-z_$][A-Za-z0-9_$]*$")

RESERVED_JS_NAMES = frozenset(
    {
        "__defineGetter__",
        "__defineSetter__",
        "__lookupGetter__",
        "__lookupSetter__",
        "__proto__",
        "constructor",
        "hasOwnProperty",
        "isPrototypeOf",
        "propertyIsEnumerable",
        "toJSON",
        "toLocaleString",
        "toString",
        "then",
        "valueOf",
    }
)
"""Names a connector's operation cannot have: JS object internals (every name on
``Object.prototype``) and the hooks JS calls implicitly (``then``, ``toJSON``)."""


class ToolArguments(RootModel[dict[str, JsonValue]]):
    """The one argument object of a tool call, already checked against its inputSchema."""


def js_name(tool: str) -> str:
    """The name scripts call a tool by: the tool name, camelCased at ``-``, ``.``, ``_``, spaces.

    ``search`` stays ``search``; ``send_email`` and ``send-email`` become ``sendEmail``.
    """
    parts = [p for p in re.split(r"[-._\s/]+", tool) if p]
    if not parts:
        return tool
    head, *rest = parts
    return head[:1].lower() + head[1:] + "".join(p[:1].upper() + p[1:] for p in rest)


def _suggest(name: str) -> str:
    letters = re.sub(r"[^A-Za-z0-9]", "", name) or "tool"
    return letters[:1].lower() + letters[1:] + "Tool"


class ToolOperation(Operation[ToolArguments]):
    """One MCP tool as an operation: arguments validated with the tool's JSON Schema."""

    def __init__(
        self,
        tool: Tool,
        handler: Callable[..., Any],
        *,
        name: str,
        kind: OperationKind,
        permission: str,
    ) -> None:
        super().__init__(
            handler,
            kind=kind,
            permission=permission,
            args=ToolArguments,
            name=name,
            description=tool.description or tool.title or "",
            result=_output_schema(tool),
        )
        self.tool_name = tool.name
        self.schema: dict[str, Any] = json.loads(json.dumps(tool.inputSchema))
        self.schema.setdefault("type", "object")
        validator_class = jsonschema.validators.validator_for(self.schema)
        validator_class.check_schema(self.schema)
        self._validator = validator_class(self.schema)

    def parse(self, raw: Any, *, connector: str) -> ToolArguments:
        """Check `raw` against the tool's inputSchema; `InvalidArguments` lists every problem."""
        if raw is None:
            raw = {}
        if isinstance(raw, RootModel):
            raw = raw.root
        subject = f"arguments of ctx.{connector}.{self.js_name}"
        if not isinstance(raw, dict):
            problem = f"the argument must be one object, got {type(raw).__name__}"
            raise InvalidArguments(f"invalid {subject}:\n  {problem}", problems=[problem])
        problems = [
            f"`{'.'.join(str(p) for p in error.absolute_path) or '(value)'}`: {error.message}"
            for error in sorted(
                self._validator.iter_errors(raw), key=lambda e: list(map(str, e.path))
            )
        ]
        if problems:
            raise InvalidArguments(
                f"invalid {subject}:\n  " + "\n  ".join(problems), problems=problems
            )
        return ToolArguments.model_validate(raw)

    def manifest(self) -> OperationManifest:
        """The operation with the tool's own inputSchema as its argument schema."""
        return OperationManifest(
            name=self.js_name,
            kind=self.kind,
            permission=self.permission,
            description=self.description,
            arguments=self.schema,
            result=self.result_schema,
            reconcilable=self.reconcilable,
        )


def _output_schema(tool: Tool) -> dict[str, Any] | None:
    """The tool's outputSchema when the server gives a valid one, else None (not declared)."""
    schema = getattr(tool, "outputSchema", None)
    if not isinstance(schema, dict):
        return None
    copied: dict[str, Any] = json.loads(json.dumps(schema))
    try:
        jsonschema.validators.validator_for(copied).check_schema(copied)
    except jsonschema.SchemaError:
        return None
    return copied


def default_kind(tool: Tool) -> OperationKind:
    """``read`` for a tool annotated readOnlyHint, else ``mutation`` (the safe default)."""
    if tool.annotations is not None and tool.annotations.readOnlyHint is True:
        return OperationKind.READ
    return OperationKind.MUTATION


def tool_operations(
    connector: str,
    settings: McpSettings,
    tools: list[Tool],
    handler: Callable[[Tool], Callable[..., Any]],
) -> dict[str, ToolOperation]:
    """One operation per tool, keyed by JS name, with the settings' overrides applied.

    Raises `ConfigurationError` for an override or reconcile tool the server does
    not list, a tool whose schema is not valid JSON Schema, a JS name in
    `RESERVED_JS_NAMES` (the message names the ``tools.<tool>.name`` override to
    set), or two tools that end up with one JS name.
    """
    by_name = {t.name: t for t in tools}
    where = f"connector {connector!r} ({settings.where()})"
    offered = ", ".join(sorted(by_name)) or "none"
    for unknown in sorted(set(settings.tools) - set(by_name)):
        raise ConfigurationError(
            f"{where}: `tools.{unknown}` overrides a tool the server does not list; "
            f"its tools: {offered}"
        )
    operations: dict[str, ToolOperation] = {}
    for tool in sorted(tools, key=lambda t: t.name):
        override = settings.tools.get(tool.name, McpToolSettings())
        kind = override.kind or default_kind(tool)
        access = "read" if kind in (OperationKind.READ, OperationKind.READ_BY_ID) else "write"
        name = override.name or js_name(tool.name)
        if not _IDENTIFIER.match(name):
            raise ConfigurationError(
                f"{where}: tool {tool.name!r} has no usable JS name ({name!r}); "
                f'set `tools.{tool.name}.name = "someName"`'
            )
        if name in RESERVED_JS_NAMES:
            chosen = "its override" if override.name else "its JS name"
            raise ConfigurationError(
                f"{where}: tool {tool.name!r} cannot be ctx.{connector}.{name}: {chosen} "
                f"{name!r} is a JS object internal; map it to another name in keep.toml with "
                f'`[connectors.{connector}.tools.{tool.name}]` `name = "{_suggest(name)}"`'
            )
        if name in operations:
            raise ConfigurationError(
                f"{where}: tools {operations[name].tool_name!r} and {tool.name!r} both become "
                f'ctx.{connector}.{name}; set `tools.<tool>.name = "otherName"` on one of them'
            )
        try:
            operations[name] = ToolOperation(
                tool,
                handler(tool),
                name=name,
                kind=kind,
                permission=override.permission or f"{connector}.{access}",
            )
        except jsonschema.SchemaError as exc:
            raise ConfigurationError(
                f"{where}: tool {tool.name!r} has an inputSchema that is not valid JSON Schema: "
                f"{exc.message}"
            ) from None
    if settings.reconcile_tool is not None:
        reconciler = next(
            (op for op in operations.values() if op.tool_name == settings.reconcile_tool), None
        )
        if reconciler is None:
            raise ConfigurationError(
                f"{where}: `reconcile_tool = {settings.reconcile_tool!r}` is not a tool the "
                f"server lists; its tools: {offered}"
            )
        if reconciler.kind is OperationKind.MUTATION:
            raise ConfigurationError(
                f"{where}: `reconcile_tool = {settings.reconcile_tool!r}` is a mutation; name "
                'a read tool (readOnlyHint, or `kind = "read"` in its override)'
            )
    return operations
