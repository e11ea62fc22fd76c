"""Host overhead of an MCP tool call over the bare MCP client call to the same local server.

    python benchmarks/connectors_mcp.py [--calls 300] [--rounds 5]

A FastMCP server with one read tool runs locally over stdio and over streamable
HTTP (127.0.0.1). In each round, interleaved: ``calls`` awaits of
``ClientSession.call_tool`` on a plain asyncio loop (the baseline), then ``calls``
synchronous ``ConnectorSet.invoke`` of the same tool through the MCP connector
(argument check with the tool's JSON Schema, the hop to the connector's loop
thread, result conversion). Prints the median µs per call of each, the median
extra µs and the ratio; then the host's own parts measured alone, without the
server: the argument check and the hop to the loop thread and back. On a loaded
machine the server round trip varies far more than those parts cost.
"""

from __future__ import annotations

import argparse
import asyncio
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import streamable_http_client

from keep_sdk.connectors import ConnectorSet
from keep_sdk.connectors.mcp import McpSettings, build
from keep_sdk.model import OperationKind

SERVER = """
import sys
from mcp.server.fastmcp import FastMCP
from mcp.types import ToolAnnotations

port = int(sys.argv[1]) if len(sys.argv) > 1 else 8000
server = FastMCP("bench", host="127.0.0.1", port=port, stateless_http=True,
                 json_response=True, log_level="WARNING")

@server.tool(annotations=ToolAnnotations(readOnlyHint=True))
def lookup(id: str, limit: int = 10) -> dict:
    return {"id": id, "items": list(range(limit))}

server.run(transport="streamable-http" if len(sys.argv) > 1 else "stdio")
"""

ARGS = {"id": "c-42", "limit": 10}


def _median_us(samples: list[float]) -> float:
    return statistics.median(samples) * 1e6


async def _bare_round(session: ClientSession, calls: int) -> list[float]:
    times = []
    for _ in range(calls):
        started = time.perf_counter()
        await session.call_tool("lookup", ARGS)
        times.append(time.perf_counter() - started)
    return times


def _host_round(invoke: Callable[[], object], calls: int) -> list[float]:
    times = []
    for _ in range(calls):
        started = time.perf_counter()
        invoke()
        times.append(time.perf_counter() - started)
    return times


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def _measure(transport: str, script: Path, calls: int, rounds: int) -> tuple[float, float]:
    bare, host = samples(transport, script, calls, rounds)
    return _median_us(bare), _median_us(host)


def samples(
    transport: str, script: Path, calls: int, rounds: int
) -> tuple[list[float], list[float]]:
    """Seconds per call of the bare client and of the host, `rounds` interleaved batches
    of `calls` each (bare first, then host, in every round)."""
    bare: list[float] = []
    host: list[float] = []
    process = None
    if transport == "stdio":
        settings = McpSettings(command=sys.executable, args=[str(script)])
    else:
        port = _free_port()
        process = subprocess.Popen([sys.executable, str(script), str(port)])
        deadline = time.monotonic() + 30
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
                break
            except OSError:
                if time.monotonic() > deadline:
                    raise SystemExit("the HTTP server did not start") from None
                time.sleep(0.05)
        settings = McpSettings(url=f"http://127.0.0.1:{port}/mcp")
    connectors = ConnectorSet([build("bench", settings)])

    async def bare_rounds() -> None:
        if transport == "stdio":
            params = StdioServerParameters(command=sys.executable, args=[str(script)])
            transport_cm = stdio_client(params)
        else:
            transport_cm = streamable_http_client(str(settings.url))
        async with transport_cm as (read, write, *_), ClientSession(read, write) as session:
            await session.initialize()
            await _bare_round(session, 20)
            for _ in range(rounds):
                bare.extend(await _bare_round(session, calls))
                host.extend(
                    await asyncio.to_thread(
                        _host_round, lambda: connectors.invoke("bench", "lookup", ARGS), calls
                    )
                )

    try:
        asyncio.run(bare_rounds())
    finally:
        connectors["bench"].close()  # type: ignore[attr-defined]
        if process is not None:
            process.terminate()
            process.wait(10)
    return bare, host


def _parts() -> None:
    from mcp.types import Tool

    from keep_sdk.connectors.mcp.portal import Portal
    from keep_sdk.connectors.mcp.tools import ToolOperation

    schema = {
        "type": "object",
        "properties": {"id": {"type": "string"}, "limit": {"type": "integer", "default": 10}},
        "required": ["id"],
    }
    op = ToolOperation(
        Tool(name="lookup", inputSchema=schema),
        lambda *a, **k: None,
        name="lookup",
        kind=OperationKind.READ,
        permission="bench.read",
    )
    portal = Portal("bench-hop")

    async def nothing() -> None:
        return None

    check = _median_us(_host_round(lambda: op.parse(ARGS, connector="bench"), 2000) or [0.0])
    hop = _median_us(_host_round(lambda: portal.call(nothing()), 2000) or [0.0])
    portal.close()
    print(f"host parts alone: argument check {check:.1f} µs, loop-thread hop {hop:.1f} µs")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=300)
    parser.add_argument("--rounds", type=int, default=5)
    options = parser.parse_args()
    _parts()
    with tempfile.TemporaryDirectory() as folder:
        script = Path(folder) / "bench_server.py"
        script.write_text(SERVER)
        print(f"{options.rounds} rounds x {options.calls} calls, CPython {sys.version.split()[0]}")
        print(f"{'transport':10} {'bare µs':>9} {'host µs':>9} {'extra µs':>9} {'ratio':>6}")
        for transport in ("stdio", "http"):
            bare, host = _measure(transport, script, options.calls, options.rounds)
            print(f"{transport:10} {bare:9.0f} {host:9.0f} {host - bare:9.0f} {host / bare:6.2f}")


if __name__ == "__main__":
    main()
