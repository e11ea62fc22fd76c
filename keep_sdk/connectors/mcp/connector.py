"""`McpConnector` and `build`: an MCP server's tools as a connector's operations."""

from __future__ import annotations

import json
import re
import weakref
from collections.abc import Callable
from types import TracebackType
from typing import Any, ClassVar

from mcp.types import CallToolResult, TextContent, Tool
from pydantic import JsonValue

from keep_sdk.connectors.base import Connector
from keep_sdk.connectors.mcp._link import CallFailed, Dropped, Link, TooLarge, Unreachable
from keep_sdk.connectors.mcp.portal import Portal
from keep_sdk.connectors.mcp.settings import McpSettings
from keep_sdk.connectors.mcp.tools import ToolArguments, tool_operations
from keep_sdk.errors import (
    ConfigurationError,
    PreconditionFailed,
    TransientError,
    UncertainOutcome,
)
from keep_sdk.model import OperationKind, ReconcileOutcome, ReconcileStatus

__all__ = ["McpConnector", "build"]

_NAME = re.compile(r"^[a-z][A-Za-z0-9]*$")
_ERROR_TEXT_LIMIT = 500


class McpConnector(Connector):
    """Base of the connector classes `build` makes, one per configured MCP server.

    Its operations are the server's tools as listed when it was built; a tool the
    server adds later is not an operation, and one it removes fails when called.
    `close` ends the session (a stdio server is stopped) and the loop thread.
    """

    settings: ClassVar[McpSettings]
    tools: ClassVar[tuple[Tool, ...]] = ()

    def __init__(self, link: Link, portal: Portal) -> None:
        self._link = link
        self._portal = portal
        self._finalizer = weakref.finalize(self, _shutdown, link, portal)

    def close(self) -> None:
        """End the session and stop the loop thread. Idempotent."""
        self._finalizer()

    def __enter__(self) -> McpConnector:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def call_tool(self, tool: str, arguments: dict[str, Any], key: str | None) -> JsonValue:
        """Call `tool`; a mutation passes its idempotency `key` (sent in ``_meta``).

        Failures are classified: no connection before sending → `TransientError`;
        dropped or timed out after sending → `UncertainOutcome` for a mutation,
        `TransientError` for a read; a JSON-RPC error or a result with ``isError``
        → `PreconditionFailed`; a result past ``max_result_bytes`` → `PreconditionFailed`
        for a read, `UncertainOutcome` for a mutation.
        """
        js = next((op.js_name for op in self.operations.values() if _tool(op) == tool), tool)
        what = f"ctx.{self.name}.{js}"
        where = self.settings.where()
        try:
            result = self._link.call(tool, arguments, key)
        except Unreachable as exc:
            raise TransientError(
                f"{what}: cannot reach the MCP server {where} ({exc}); nothing was sent"
            ) from None
        except Dropped as exc:
            if key is not None:
                raise UncertainOutcome(
                    f"{what}: {exc} after the call was sent to {where}; it may have taken effect"
                ) from None
            raise TransientError(f"{what}: {exc} ({where})") from None
        except CallFailed as exc:
            raise PreconditionFailed(f"{what}: the MCP server refused the call: {exc}") from None
        except TooLarge as exc:
            too_large = (
                f"{what}: the MCP server {where} answered with {exc}, past max_result_bytes "
                f"({self.settings.max_result_bytes}); it was not read further"
            )
            if key is not None:
                raise UncertainOutcome(f"{too_large}; the call may have taken effect") from None
            raise PreconditionFailed(
                f"{too_large}; ask for less or raise max_result_bytes in keep.toml"
            ) from None
        if result.isError:
            raise PreconditionFailed(f"{what}: the tool reported an error: {_error_text(result)}")
        return result_json(result)

    def reconcile_by_tool(self, key: str) -> ReconcileOutcome:
        """Ask the configured reconcile tool whether the call with `key` took effect.

        The tool gets ``{"idempotencyKey": key}`` and answers ``{"applied": true,
        "result": ...}`` or ``{"applied": false}``; anything else means "cannot tell".
        """
        tool = self.settings.reconcile_tool
        assert tool is not None
        answer = self.call_tool(tool, {"idempotencyKey": key}, None)
        if isinstance(answer, dict) and isinstance(answer.get("applied"), bool):
            if answer["applied"]:
                return ReconcileOutcome(status=ReconcileStatus.APPLIED, result=answer.get("result"))
            return ReconcileOutcome(
                status=ReconcileStatus.FAILED,
                detail=f"{tool} found no call with idempotency key {key}",
            )
        return ReconcileOutcome(
            status=ReconcileStatus.RETRY,
            detail=f"{tool} answered {json.dumps(answer)[:200]}, not {{applied, result}}",
        )


def _tool(op: object) -> str | None:
    return getattr(op, "tool_name", None)


def _shutdown(link: Link, portal: Portal) -> None:
    link.close()
    portal.close()


def result_json(result: CallToolResult) -> JsonValue:
    """What a script receives: structuredContent, else the one text parsed as JSON
    (or the text itself), else the content blocks."""
    if result.structuredContent is not None:
        return result.structuredContent
    if len(result.content) == 1 and isinstance(result.content[0], TextContent):
        text = result.content[0].text
        try:
            parsed: JsonValue = json.loads(text)
        except ValueError:
            return text
        return parsed
    return [c.model_dump(mode="json", exclude_none=True) for c in result.content]


def _error_text(result: CallToolResult) -> str:
    text = " ".join(c.text for c in result.content if isinstance(c, TextContent)).strip()
    text = text or "no message"
    if len(text) > _ERROR_TEXT_LIMIT:
        text = text[:_ERROR_TEXT_LIMIT] + "…"
    return text


def _handler(tool: Tool) -> Callable[..., JsonValue]:
    def call(
        self: McpConnector, args: ToolArguments, *, idempotency_key: str | None = None
    ) -> JsonValue:
        return self.call_tool(tool.name, args.root, idempotency_key)

    call.__name__ = f"tool_{re.sub(r'[^A-Za-z0-9_]', '_', tool.name)}"
    return call


def _reconcile(self: McpConnector, args: ToolArguments, idempotency_key: str) -> ReconcileOutcome:
    return self.reconcile_by_tool(idempotency_key)


def connector_class(name: str, settings: McpSettings, tools: list[Tool]) -> type[McpConnector]:
    """The connector class for `tools` of the server `settings` describes."""
    operations = tool_operations(name, settings, tools, _handler)
    if settings.reconcile_tool is not None:
        for op in operations.values():
            if op.kind is OperationKind.MUTATION:
                op.reconcile_func = _reconcile
    namespace: dict[str, Any] = {
        "name": name,
        "description": settings.description or f"MCP server {settings.where()}",
        "settings": settings,
        "tools": tuple(tools),
        "__module__": __name__,
        "__doc__": settings.description or None,
    }
    namespace.update({f"_op_{js}": op for js, op in operations.items()})
    return type(f"McpConnector_{name}", (McpConnector,), namespace)


def build(name: str, settings: McpSettings) -> McpConnector:
    """Connect to the server, list its tools and return the connector `name` for them.

    Raises `ConfigurationError` naming the connector and the server when the
    server cannot be started or reached, or when the settings do not fit its tools.
    """
    if not _NAME.match(name):
        raise ConfigurationError(
            f"connector name {name!r} is not usable in scripts; use a JS identifier starting "
            "with a lowercase letter, such as 'crm'"
        )
    portal = Portal(f"keep-mcp-{name}")
    link = Link(settings, portal)
    try:
        tools = link.list_tools()
        cls = connector_class(name, settings, tools)
    except Unreachable as exc:
        _shutdown(link, portal)
        if exc.status in (401, 403):
            raise ConfigurationError(
                f"connector {name!r}: the MCP server {settings.where()} refused the credentials "
                f"({exc}); check `headers` of [connectors.{name}] in keep.toml and the secret "
                "they reference"
            ) from None
        raise _unstarted(name, settings, exc) from None
    except (Dropped, CallFailed) as exc:
        _shutdown(link, portal)
        raise _unstarted(name, settings, exc) from None
    except BaseException:
        _shutdown(link, portal)
        raise
    return cls(link, portal)


def _unstarted(name: str, settings: McpSettings, exc: Exception) -> ConfigurationError:
    """The one message of a server that could not be started or reached at build."""
    what = "start" if settings.command is not None else "reach"
    return ConfigurationError(
        f"connector {name!r}: could not {what} the MCP server {settings.where()} and list "
        f"its tools: {exc}; check `{'command' if settings.command else 'url'}` and that "
        "the server runs"
    )
