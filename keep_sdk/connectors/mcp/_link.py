"""`Link`: one MCP client session to one server, reopened after it drops."""

from __future__ import annotations

import asyncio
import datetime as dt
import logging
import os
import sys
import time
from collections.abc import AsyncIterator, Callable
from contextlib import AsyncExitStack, asynccontextmanager, suppress
from typing import Any, TextIO

import httpx
from mcp import ClientSession, McpError, StdioServerParameters
from mcp.client import streamable_http
from mcp.types import CONNECTION_CLOSED, CallToolResult, Tool

from keep_sdk.connectors.mcp._stdio import LOG, bounded_stdio
from keep_sdk.connectors.mcp.portal import Portal
from keep_sdk.connectors.mcp.settings import McpSettings

__all__ = ["CallFailed", "Dropped", "Link", "TooLarge", "Unreachable"]

META_KEY = "idempotencyKey"
"""The `_meta` field of a tools/call request that carries the idempotency key."""


class Unreachable(Exception):
    """The server could not be reached or did not initialise: nothing was sent.

    `status` is the HTTP status a server over HTTP answered with (401 for a refused
    token), None when it did not answer."""

    def __init__(self, message: str, *, status: int | None = None) -> None:
        super().__init__(message)
        self.status = status


class Dropped(Exception):
    """The connection ended or timed out while a call was under way."""


class CallFailed(Exception):
    """The server answered the call with a JSON-RPC error: it refused it."""


class TooLarge(Exception):
    """The server sent a message larger than ``max_result_bytes`` while the call waited."""

    def __init__(self, size: int) -> None:
        super().__init__(f"a message of more than {size} bytes")
        self.size = size


class _Quiet(logging.Handler):
    """Takes the MCP SDK's log records (tracebacks included) and says each in one debug line."""

    def emit(self, record: logging.LogRecord) -> None:
        reason = ""
        if record.exc_info and record.exc_info[1] is not None:
            reason = f": {_describe(record.exc_info[1])}"
        LOG.debug("mcp: %s%s", record.getMessage()[:300], reason[:300])


def _quiet_sdk_logs() -> None:
    """The SDK logs parse errors with their traceback (`logger.exception`); without a
    logging setup Python prints those to stderr. Keep them in one debug line instead."""
    sdk = logging.getLogger("mcp")
    if not any(isinstance(h, _Quiet) for h in sdk.handlers):
        sdk.addHandler(_Quiet())
    sdk.propagate = False


_quiet_sdk_logs()


class Link:
    """A client session held open in a task on the portal's loop.

    The first `list_tools` or `call` starts the transport (spawns `command`, or
    connects to `url`) and initialises the session, in the same hop to the loop
    thread. After a dropped connection the next call opens a new session first.
    """

    def __init__(self, settings: McpSettings, portal: Portal) -> None:
        self.settings = settings
        self.portal = portal
        self._session: ClientSession | None = None
        self._stop: asyncio.Event | None = None
        self._holder: asyncio.Task[None] | None = None
        self._opening = asyncio.Lock()
        self._waiting: set[asyncio.Future[Exception]] = set()

    def list_tools(self) -> list[Tool]:
        """Every tool the server lists now (all pages)."""
        try:
            return self.portal.call(self._list_tools(), self._budget())
        except RuntimeError as exc:
            raise Unreachable(str(exc)) from None
        except TimeoutError:
            raise Unreachable(f"no answer within {self._budget():g}s") from None

    def call(self, tool: str, arguments: dict[str, Any], key: str | None) -> CallToolResult:
        """Call `tool` within ``call_timeout_s`` in all (connecting included).

        `Unreachable` before sending; `Dropped`, `CallFailed` or `TooLarge` after.
        """
        limit = self.settings.call_timeout_s
        deadline = time.monotonic() + limit
        try:
            return self.portal.call(self._call(tool, arguments, key, deadline), limit + 2)
        except RuntimeError as exc:
            raise Unreachable(str(exc)) from None
        except TimeoutError:
            raise Dropped(f"no answer within {limit:g}s") from None

    def _budget(self) -> float:
        return self.settings.connect_timeout_s + self.settings.call_timeout_s + 5

    def close(self) -> None:
        """End the session and the transport (stops a stdio server)."""
        with suppress(TimeoutError, RuntimeError):
            self.portal.call(self._close(), 30)

    async def _open(self) -> None:
        if self._session is not None and self._holder is not None and not self._holder.done():
            return
        async with self._opening:
            await self._open_unlocked()

    async def _open_unlocked(self) -> None:
        if self._session is not None and self._holder is not None and not self._holder.done():
            return
        ready: asyncio.Future[ClientSession] = asyncio.get_running_loop().create_future()
        self._stop = asyncio.Event()
        self._holder = asyncio.create_task(self._hold(ready, self._stop))
        try:
            async with asyncio.timeout(self.settings.connect_timeout_s):
                self._session = await asyncio.shield(ready)
        except TimeoutError:
            self._stop.set()
            self._holder.cancel()
            raise Unreachable(f"no answer within {self.settings.connect_timeout_s:g}s") from None
        except asyncio.CancelledError:
            self._stop.set()
            self._holder.cancel()
            raise

    async def _hold(self, ready: asyncio.Future[ClientSession], stop: asyncio.Event) -> None:
        mine: ClientSession | None = None
        try:
            async with AsyncExitStack() as stack:
                if self.settings.url is not None:
                    read, write = await stack.enter_async_context(await self._http(stack))
                else:
                    assert self.settings.command is not None
                    params = StdioServerParameters(
                        command=self.settings.command,
                        args=list(self.settings.args),
                        env={k: v.get_secret_value() for k, v in self.settings.env.items()},
                        cwd=self.settings.cwd,
                    )
                    read, write = await stack.enter_async_context(
                        bounded_stdio(
                            params,
                            max_message_bytes=self.settings.max_result_bytes,
                            oversized=self._too_large,
                            errlog=_errlog(),
                        )
                    )
                session = await stack.enter_async_context(ClientSession(read, write))
                mine = session
                await session.initialize()
                if not ready.done():
                    ready.set_result(session)
                await stop.wait()
        except BaseException as exc:
            if not ready.done():
                ready.set_exception(Unreachable(_describe(exc), status=_status(exc)))
            if isinstance(exc, asyncio.CancelledError):
                raise
        finally:
            if not ready.done():
                ready.set_exception(Unreachable("the connection closed during initialisation"))
            if mine is not None and self._session is mine:
                self._session = None

    async def _http(self, stack: AsyncExitStack) -> Any:
        assert self.settings.url is not None
        headers = {k: v.get_secret_value() for k, v in self.settings.headers.items()}
        timeout = httpx.Timeout(
            self.settings.connect_timeout_s, read=self.settings.call_timeout_s + 5
        )
        client = await stack.enter_async_context(
            httpx.AsyncClient(
                headers=headers or None,
                timeout=timeout,
                transport=_Watch(
                    httpx.AsyncHTTPTransport(),
                    self._refused,
                    self._too_large,
                    self.settings.max_result_bytes,
                ),
            )
        )
        return _two(streamable_http.streamable_http_client(self.settings.url, http_client=client))

    async def _list_tools(self) -> list[Tool]:
        await self._open()
        session = self._live()
        tools: list[Tool] = []
        cursor: str | None = None
        while True:
            page = await session.list_tools(cursor=cursor) if cursor else await session.list_tools()
            tools.extend(page.tools)
            cursor = page.nextCursor
            if not cursor:
                return tools

    async def _call(
        self, tool: str, arguments: dict[str, Any], key: str | None, deadline: float
    ) -> CallToolResult:
        limit = self.settings.call_timeout_s
        try:
            async with asyncio.timeout(deadline - time.monotonic()):
                await self._open()
        except TimeoutError:
            raise Unreachable(f"not connected within {limit:g}s") from None
        session = self._live()
        meta = {META_KEY: key} if key is not None else None
        left = max(deadline - time.monotonic(), 0.001)
        interrupted: asyncio.Future[Exception] = asyncio.get_running_loop().create_future()
        self._waiting.add(interrupted)
        call = asyncio.ensure_future(
            session.call_tool(
                tool, arguments, read_timeout_seconds=dt.timedelta(seconds=left), meta=meta
            )
        )
        try:
            waiting: set[asyncio.Future[Any]] = {call, interrupted}
            await asyncio.wait(waiting, timeout=left, return_when=asyncio.FIRST_COMPLETED)
            if not call.done():
                call.cancel()
                if not interrupted.done():
                    raise Dropped(f"no answer within {limit:g}s")
                reason = interrupted.result()
                if isinstance(reason, Unreachable):
                    await self._drop()
                raise reason
            return call.result()
        except McpError as exc:
            if exc.error.code == CONNECTION_CLOSED:
                await self._drop()
                raise Dropped("the server closed the connection during the call") from None
            if "timed out" in exc.error.message.lower():
                raise Dropped(f"no answer within {limit:g}s") from None
            raise CallFailed(f"{exc.error.message} (JSON-RPC error {exc.error.code})") from None
        except (OSError, EOFError, RuntimeError) as exc:
            await self._drop()
            raise Dropped(_describe(exc)) from None
        except Exception as exc:
            if type(exc).__module__.startswith(("anyio", "httpx", "httpcore")):
                await self._drop()
                raise Dropped(_describe(exc)) from None
            raise
        finally:
            self._waiting.discard(interrupted)
            if not call.done():
                call.cancel()

    def _interrupt(self, reason: Exception) -> None:
        for waiter in list(self._waiting):
            if not waiter.done():
                waiter.set_result(reason)

    def _too_large(self, size: int) -> None:
        """The server sent a message past the cap: the calls waiting now fail with `TooLarge`."""
        self._interrupt(TooLarge(size))

    def _refused(self, reason: str) -> None:
        """A POST could not connect: calls waiting now were not sent; fail them at once."""
        self._interrupt(Unreachable(reason))

    def _live(self) -> ClientSession:
        if self._session is None:
            raise Unreachable("the session is not open")
        return self._session

    async def _drop(self) -> None:
        self._session = None
        await self._close()

    async def _close(self) -> None:
        stop, holder = self._stop, self._holder
        self._session = None
        self._holder = None
        if stop is not None:
            stop.set()
        if holder is not None and not holder.done():
            try:
                async with asyncio.timeout(10):
                    await asyncio.shield(holder)
            except (TimeoutError, Exception):
                holder.cancel()


class _Watch(httpx.AsyncBaseTransport):
    """An HTTP transport that reports a POST whose connection could not be made, and
    reads each answer through `_Capped`."""

    def __init__(
        self,
        inner: httpx.AsyncBaseTransport,
        refused: Callable[[str], None],
        oversized: Callable[[int], None],
        cap: int,
    ) -> None:
        self._inner = inner
        self._report = refused
        self._oversized = oversized
        self._cap = cap

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        try:
            response = await self._inner.handle_async_request(request)
        except httpx.ConnectError as exc:
            if request.method == "POST":
                self._report(f"cannot connect: {_describe(exc)}")
            raise
        events = response.headers.get("content-type", "").startswith("text/event-stream")
        assert isinstance(response.stream, httpx.AsyncByteStream)
        capped = _Capped(response.stream, self._cap, self._oversized, events=events)
        return httpx.Response(
            response.status_code,
            headers=response.headers,
            stream=capped,
            extensions=response.extensions,
        )

    async def aclose(self) -> None:
        await self._inner.aclose()


class _Capped(httpx.AsyncByteStream):
    """An answer's body, stopped once one message is past `cap` bytes.

    A JSON answer is one message; in an event stream each event (up to a blank line)
    is one. Past the cap `oversized` is told and the read fails.
    """

    def __init__(
        self,
        inner: httpx.AsyncByteStream,
        cap: int,
        oversized: Callable[[int], None],
        *,
        events: bool,
    ) -> None:
        self._inner = inner
        self._cap = cap
        self._oversized = oversized
        self._events = events

    async def __aiter__(self) -> AsyncIterator[bytes]:
        size = 0
        tail = b""
        async for chunk in self._inner:
            if self._events:
                seen = tail + chunk
                cut = max(seen.rfind(b"\n\n"), seen.rfind(b"\r\n\r\n"))
                size = len(seen) - cut - 1 if cut >= 0 else size + len(chunk)
                tail = seen[-3:]
            else:
                size += len(chunk)
            if size > self._cap:
                self._oversized(size)
                raise _Oversized(f"a message of more than {self._cap} bytes")
            yield chunk

    async def aclose(self) -> None:
        await self._inner.aclose()


class _Oversized(httpx.HTTPError):
    """A message from the server past ``max_result_bytes`` (ends that answer's read)."""


@asynccontextmanager
async def _two(transport: Any) -> AsyncIterator[tuple[Any, Any]]:
    async with transport as (read, write, *_):
        yield read, write


def _errlog() -> TextIO:
    """Where a stdio server's stderr goes: ours, when it is a real file (not a capture)."""
    for stream in (sys.stderr, sys.__stderr__):
        if stream is None:
            continue
        try:
            stream.fileno()
        except (AttributeError, OSError, ValueError):
            continue
        return stream
    return open(os.devnull, "w")


def _innermost(exc: BaseException) -> BaseException:
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    return exc


def _status(exc: BaseException) -> int | None:
    """The HTTP status behind a connection failure, if the server answered."""
    inner = _innermost(exc)
    return inner.response.status_code if isinstance(inner, httpx.HTTPStatusError) else None


def _describe(exc: BaseException) -> str:
    """A one-line account of a connection failure, unwrapping exception groups."""
    exc = _innermost(exc)
    if isinstance(exc, httpx.HTTPStatusError):
        return f"it answered HTTP {exc.response.status_code} {exc.response.reason_phrase}"
    text = str(exc).strip() or type(exc).__name__
    return f"{type(exc).__name__}: {text}" if text != type(exc).__name__ else text
