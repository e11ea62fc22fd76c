"""A real MCP server for the tests: a notes service over stdio or streamable HTTP.

Run as ``python notes_server.py STATE_FILE [--http PORT] [--variant changed|huge]``
(``huge`` adds a read tool ``dump(size)`` answering `size` bytes of text).
Its notes persist in STATE_FILE (JSON), so a test can count effects after the
server crashed. A fault for the next mutation is read (and removed) from
``STATE_FILE.fault``: ``crash_before``, ``crash_after``, ``hang`` or ``error``.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

from mcp.server.fastmcp import Context, FastMCP
from mcp.server.fastmcp.exceptions import ToolError
from mcp.types import ToolAnnotations

READ = ToolAnnotations(readOnlyHint=True)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("state")
    parser.add_argument("--http", type=int)
    parser.add_argument("--variant", default="base")
    parser.add_argument("--token", help="over HTTP: answer 401 unless `Bearer TOKEN` is sent")
    options = parser.parse_args()
    state = Path(options.state)
    fault_file = state.with_name(state.name + ".fault")
    server = FastMCP(
        "notes",
        host="127.0.0.1",
        port=options.http or 8000,
        stateless_http=True,
        json_response=True,
    )

    def load() -> dict[str, Any]:
        if not state.exists():
            return {"notes": [], "calls": 0}
        loaded: dict[str, Any] = json.loads(state.read_text())
        return loaded

    def save(doc: dict[str, Any]) -> None:
        tmp = state.with_name(state.name + ".tmp")
        tmp.write_text(json.dumps(doc))
        os.replace(tmp, state)

    def take_fault() -> str | None:
        if not fault_file.exists():
            return None
        fault = fault_file.read_text().strip()
        fault_file.unlink()
        return fault

    def key_of(ctx: Context) -> str | None:  # type: ignore[type-arg]
        meta = ctx.request_context.meta
        return None if meta is None else (meta.model_extra or {}).get("idempotencyKey")

    @server.tool(annotations=READ if options.variant != "changed" else None)
    def search_notes(query: str = "") -> dict[str, Any]:
        """Notes whose text contains the query."""
        return {"notes": [n for n in load()["notes"] if query in n["text"]]}

    @server.tool(annotations=READ)
    def find_by_key(idempotencyKey: str) -> dict[str, Any]:
        """Whether a note was added with this idempotency key."""
        for note in load()["notes"]:
            if note["key"] == idempotencyKey:
                return {"applied": True, "result": {"id": note["id"]}}
        return {"applied": False}

    @server.tool()
    def add_note(text: str, ctx: Context) -> dict[str, Any]:  # type: ignore[type-arg]
        """Add a note; one per idempotency key."""
        key = key_of(ctx)
        fault = take_fault()
        if fault == "error":
            raise ToolError("the notes service refuses this note")
        if fault == "crash_before":
            os._exit(3)
        if fault == "hang":
            time.sleep(3600)
        doc = load()
        doc["calls"] += 1
        for note in doc["notes"]:
            if key is not None and note["key"] == key:
                save(doc)
                return {"id": note["id"]}
        note = {"id": f"n{len(doc['notes']) + 1}", "text": text, "key": key}
        doc["notes"].append(note)
        save(doc)
        if fault == "crash_after":
            os._exit(3)
        return {"id": note["id"]}

    if options.variant == "huge":

        @server.tool(annotations=READ)
        def dump(size: int) -> str:
            """`size` bytes of text (the hostile-result variant)."""
            return "x" * size

    if options.variant == "changed":

        @server.tool()
        def purge() -> str:
            """Delete every note."""
            save({"notes": [], "calls": 0})
            return "purged"

    else:

        @server.tool(name="delete-note")
        def delete_note(id: str) -> dict[str, Any]:
            """Delete one note."""
            doc = load()
            doc["notes"] = [n for n in doc["notes"] if n["id"] != id]
            save(doc)
            return {"deleted": id}

    @server.tool(annotations=READ)
    async def grow(ctx: Context) -> str:  # type: ignore[type-arg]
        """Add a tool named `extra` and tell the client the tool list changed."""

        def extra() -> str:
            return "extra"

        server.add_tool(extra, name="extra", description="Appeared at run time.")
        await ctx.session.send_tool_list_changed()
        return "grown"

    if options.http and options.token:
        serve_guarded(server, options.http, options.token)
    elif options.http:
        server.run(transport="streamable-http")
    else:
        server.run(transport="stdio")


def serve_guarded(server: FastMCP, port: int, token: str) -> None:
    """The streamable HTTP app behind a bearer-token check, as a real deployment has."""
    import uvicorn
    from starlette.responses import JSONResponse
    from starlette.types import Receive, Scope, Send

    inner = server.streamable_http_app()
    expected = f"Bearer {token}".encode()

    async def guarded(scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and dict(scope["headers"]).get(b"authorization") != expected:
            await JSONResponse({"error": "invalid_token"}, status_code=401)(scope, receive, send)
            return
        await inner(scope, receive, send)

    uvicorn.run(guarded, host="127.0.0.1", port=port, log_level="warning")


if __name__ == "__main__":
    sys.exit(main())
