"""`bounded_stdio`: the MCP stdio transport with a byte cap on each message, read while it arrives.

The MCP SDK's own stdio client joins a whole line before looking at it, so a server
that writes a 50 MB line makes the host hold (and copy) 50 MB. This transport reads
the server's stdout in chunks and keeps at most `max_message_bytes` of one line: the
rest of a longer line is read and thrown away, and `oversized` is called with its
size (the link fails the calls that wait). A line that is not a JSON-RPC message is
skipped with one debug line in the ``keep_sdk.connectors.mcp`` log, never a traceback.
"""

from __future__ import annotations

import logging
import subprocess
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager, suppress
from typing import Any, TextIO

import anyio
from anyio.abc import Process
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream
from mcp import StdioServerParameters
from mcp.client.stdio import get_default_environment
from mcp.shared.message import SessionMessage
from mcp.types import JSONRPCMessage

__all__ = ["LOG", "bounded_stdio"]

LOG = logging.getLogger("keep_sdk.connectors.mcp")
"""Where the MCP connector says what it skipped or refused (debug level)."""

_STOP_GRACE_S = 2.0


@asynccontextmanager
async def bounded_stdio(
    params: StdioServerParameters,
    *,
    max_message_bytes: int,
    oversized: Callable[[int], None],
    errlog: TextIO,
) -> AsyncIterator[tuple[Any, Any]]:
    """Start `params.command` and yield the (read, write) streams of a client session.

    On exit stdin is closed, the server gets `_STOP_GRACE_S` to end, then SIGTERM
    and SIGKILL.
    """
    incoming: MemoryObjectSendStream[SessionMessage | Exception]
    read: MemoryObjectReceiveStream[SessionMessage | Exception]
    incoming, read = anyio.create_memory_object_stream(0)
    write: MemoryObjectSendStream[SessionMessage]
    outgoing: MemoryObjectReceiveStream[SessionMessage]
    write, outgoing = anyio.create_memory_object_stream(0)
    env = {**get_default_environment(), **(params.env or {})}
    try:
        process = await anyio.open_process(
            [params.command, *params.args],
            env=env,
            cwd=params.cwd,
            stderr=errlog,
            start_new_session=True,
        )
    except OSError:
        for stream in (incoming, read, write, outgoing):
            await stream.aclose()
        raise

    async def reader() -> None:
        assert process.stdout is not None
        lines = _Lines(max_message_bytes)
        with suppress(anyio.ClosedResourceError, anyio.BrokenResourceError):
            async with incoming:
                async for chunk in process.stdout:
                    for line, size in lines.feed(chunk):
                        if line is None:
                            LOG.debug("refused a %d-byte message from the MCP server", size)
                            oversized(size)
                            continue
                        message = _message(line)
                        if message is not None:
                            await incoming.send(SessionMessage(message))

    async def writer() -> None:
        assert process.stdin is not None
        with suppress(anyio.ClosedResourceError, anyio.BrokenResourceError):
            async with outgoing:
                async for item in outgoing:
                    text = item.message.model_dump_json(by_alias=True, exclude_none=True)
                    await process.stdin.send((text + "\n").encode())

    async with anyio.create_task_group() as tasks:
        tasks.start_soon(reader)
        tasks.start_soon(writer)
        try:
            yield read, write
        finally:
            await _stop(process)
            for stream in (read, write, incoming, outgoing):
                await stream.aclose()
            tasks.cancel_scope.cancel()


def _message(line: bytes) -> JSONRPCMessage | None:
    if not line.strip():
        return None
    try:
        return JSONRPCMessage.model_validate_json(line)
    except ValueError:
        shown = line[:80].decode("utf-8", "replace")
        LOG.debug("skipped a line from the MCP server that is not JSON-RPC: %r", shown)
        return None


async def _stop(process: Process) -> None:
    if process.stdin is not None:
        with suppress(Exception):
            await process.stdin.aclose()
    with anyio.move_on_after(_STOP_GRACE_S):
        await process.wait()
        return
    for signal_it in (process.terminate, process.kill):
        with suppress(ProcessLookupError):
            signal_it()
        with anyio.move_on_after(_STOP_GRACE_S):
            await process.wait()
            return
    with suppress(subprocess.TimeoutExpired, ProcessLookupError):
        await process.aclose()


class _Lines:
    """Splits a byte stream into lines, holding at most `cap` bytes of one line.

    `feed` yields ``(line, size)``: the line's bytes, or None with its size when the
    line was longer than `cap` (its bytes were not kept).
    """

    def __init__(self, cap: int) -> None:
        self._cap = cap
        self._held = bytearray()
        self._dropped = 0

    def feed(self, chunk: bytes) -> list[tuple[bytes | None, int]]:
        done: list[tuple[bytes | None, int]] = []
        start = 0
        while start <= len(chunk):
            end = chunk.find(b"\n", start)
            piece = memoryview(chunk)[start : len(chunk) if end < 0 else end]
            self._take(piece)
            if end < 0:
                break
            if self._dropped:
                done.append((None, self._dropped))
            else:
                done.append((bytes(self._held), len(self._held)))
            self._held.clear()
            self._dropped = 0
            start = end + 1
        return done

    def _take(self, piece: memoryview) -> None:
        if self._dropped:
            self._dropped += len(piece)
        elif len(self._held) + len(piece) > self._cap:
            self._dropped = len(self._held) + len(piece)
            self._held.clear()
        else:
            self._held += piece
