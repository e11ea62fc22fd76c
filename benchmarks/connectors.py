"""Host overhead of a connector call over the bare client call to the same local server.

    nice python benchmarks/connectors.py [--calls 200] [--rounds 9] [--profile]

Three measurements, each in interleaved rounds (a batch of bare calls, then a batch
through the connector, alternating which goes first) so that load from other
processes falls on both alike; every figure is per call, the median and the
minimum over the rounds' batch averages:

1. **HTTP over the network**: a Starlette app under uvicorn in its own process on
   127.0.0.1 answers ``GET /contacts/{id}`` and ``POST /notes``; a bare
   `httpx.Client` request against ``Connector.invoke`` of the keep.toml HTTP
   connector (JSON Schema check of the arguments, path encoding, call limits,
   classification, redaction of the result).
2. **HTTP host work alone**: the same two clients over `httpx.MockTransport` (no
   socket, an answer built in memory); then the connector with its httpx client
   replaced by one that hands back a prepared response, which times the host's own
   work with no httpx in it, compared with the round trip of (1) (the goal of issue
   14: host work ≤ 10% of a local HTTP round trip). ``--profile`` prints where that
   work goes (cProfile of the host path).
3. **MCP over stdio**: ``ClientSession.call_tool`` against ``ConnectorSet.invoke``
   of the same FastMCP tool (`benchmarks/connectors_mcp.py` has the server and the
   streamable HTTP case), and the host parts timed alone.
"""

from __future__ import annotations

import argparse
import cProfile
import os
import pstats
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from keep_sdk.config import load_config
from keep_sdk.connectors import Connector
from keep_sdk.connectors.http import HttpSettings
from keep_sdk.connectors.http.connector import HttpConnector
from keep_sdk.connectors.types import BUILTIN_CONNECTOR_TYPES

TOKEN = "bench-token"
CONFIG = """
[connectors.crm]
type = "http"
base_url = "{url}"
headers = {{ Authorization = "Bearer ${{CRM_TOKEN}}" }}

[connectors.crm.operations.getContact]
kind = "read_by_id"
path = "/contacts/{{id}}"
arguments = {{ properties = {{ id = {{ type = "string" }} }}, required = ["id"] }}

[connectors.crm.operations.addNote]
kind = "mutation"
method = "POST"
path = "/notes"
arguments = {{ properties = {{ text = {{ type = "string" }} }}, required = ["text"] }}
"""

CONTACT = {"id": "c1", "name": "Ada", "tags": ["a", "b"]}
NOTE = {"noteId": "n1", "text": "hi"}
Call = Callable[[], object]


async def contact(request: Request) -> JSONResponse:
    return JSONResponse({**CONTACT, "id": request.path_params["cid"]})


async def note(request: Request) -> JSONResponse:
    body = await request.json()
    return JSONResponse({**NOTE, "text": body["text"]}, status_code=201)


def app() -> Starlette:
    return Starlette(
        routes=[Route("/contacts/{cid}", contact), Route("/notes", note, methods=["POST"])]
    )


def in_memory(request: httpx.Request) -> httpx.Response:
    """The app's answers without a socket (`httpx.MockTransport`)."""
    if request.method == "GET":
        return httpx.Response(200, json=CONTACT)
    return httpx.Response(201, json=NOTE)


def serve() -> tuple[str, subprocess.Popen[bytes]]:
    """The app under uvicorn in its own process (no GIL shared with the client)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    server = subprocess.Popen(
        [sys.executable, __file__, "--serve", str(port)], stderr=subprocess.DEVNULL
    )
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 30
    while True:
        try:
            httpx.get(f"{url}/contacts/x", timeout=1)
            return url, server
        except httpx.TransportError:
            if time.monotonic() > deadline:
                server.kill()
                raise
            time.sleep(0.1)


def per_call_us(func: Call, calls: int) -> float:
    started = time.perf_counter()
    for _ in range(calls):
        func()
    return (time.perf_counter() - started) / calls * 1e6


def interleaved(bare: Call, host: Call, calls: int, rounds: int) -> tuple[list[float], list[float]]:
    """Per-call µs of each batch of `bare` and of `host`, alternating which goes first."""
    for func in (bare, host):
        per_call_us(func, max(10, calls // 4))
    bare_us: list[float] = []
    host_us: list[float] = []
    for round_ in range(rounds):
        if round_ % 2:
            host_us.append(per_call_us(host, calls))
            bare_us.append(per_call_us(bare, calls))
        else:
            bare_us.append(per_call_us(bare, calls))
            host_us.append(per_call_us(host, calls))
    return bare_us, host_us


def row(name: str, bare: list[float], host: list[float]) -> dict[str, float]:
    """One table row: medians and minimums of both, the overhead and the ratio."""
    figures = {
        "bare_med": statistics.median(bare),
        "bare_min": min(bare),
        "host_med": statistics.median(host),
        "host_min": min(host),
    }
    figures["extra_med"] = figures["host_med"] - figures["bare_med"]
    figures["extra_min"] = figures["host_min"] - figures["bare_min"]
    print(
        f"| {name} | {figures['bare_med']:.0f} / {figures['bare_min']:.0f} "
        f"| {figures['host_med']:.0f} / {figures['host_min']:.0f} "
        f"| {figures['extra_med']:.0f} / {figures['extra_min']:.0f} "
        f"| {figures['host_med'] / figures['bare_med']:.2f} |"
    )
    return figures


def http_connector(url: str, transport: httpx.BaseTransport | None = None) -> Connector:
    """The keep.toml HTTP connector ``crm`` (optionally over `transport`)."""
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "keep.toml"
        path.write_text(CONFIG.format(url=url))
        types = {t.name: t for t in BUILTIN_CONNECTOR_TYPES}
        config = load_config(path, types=types, environ={"CRM_TOKEN": TOKEN})
    [crm] = config.build_connectors()
    if transport is None:
        return crm
    settings = config.connectors["crm"].settings
    assert isinstance(settings, HttpSettings)
    over: Any = type(crm)
    crm.close()  # type: ignore[attr-defined]
    built: HttpConnector = over.__new__(over)
    HttpConnector.__init__(built, settings, transport=transport)
    return built


class Answered:
    """Stands in for the connector's httpx client: every request gets the same prepared
    response at once, so a call through the connector times the host's own work only."""

    def __init__(self) -> None:
        request = httpx.Request("GET", "http://127.0.0.1/")
        self.answers = {
            "GET": httpx.Response(200, json=CONTACT, request=request),
            "POST": httpx.Response(201, json=NOTE, request=request),
        }

    def request(self, method: str, path: str, **options: Any) -> httpx.Response:
        return self.answers[method]

    def close(self) -> None:
        pass


def host_alone(url: str) -> dict[str, Call]:
    """The connector's calls with the client's answer prepared (no httpx work at all)."""
    crm = http_connector(url)
    crm.close()  # type: ignore[attr-defined]
    crm._client = Answered()  # type: ignore[attr-defined]
    return {
        "read `GET /contacts/c1`": lambda: crm.invoke("getContact", {"id": "c1"}),
        "mutation `POST /notes`": lambda: crm.invoke(
            "addNote", {"text": "hi"}, idempotency_key="keep-k"
        ),
    }


def http_cases(url: str, transport: httpx.BaseTransport | None) -> dict[str, tuple[Call, Call]]:
    crm = http_connector(url, transport)
    bare = httpx.Client(
        base_url=url, headers={"Authorization": f"Bearer {TOKEN}"}, transport=transport
    )
    return {
        "read `GET /contacts/c1`": (
            lambda: bare.get("/contacts/c1").json(),
            lambda: crm.invoke("getContact", {"id": "c1"}),
        ),
        "mutation `POST /notes`": (
            lambda: bare.post(
                "/notes", json={"text": "hi"}, headers={"Idempotency-Key": "k"}
            ).json(),
            lambda: crm.invoke("addNote", {"text": "hi"}, idempotency_key="keep-k"),
        ),
    }


HEADER = (
    "| call | bare µs (median / min) | host µs (median / min) | extra µs (median / min) | ratio |"
)


def profile_host(call: Call, calls: int) -> None:
    profile = cProfile.Profile()
    profile.enable()
    for _ in range(calls):
        call()
    profile.disable()
    stats = pstats.Stats(profile)
    stats.sort_stats("cumulative").print_stats(r"keep_sdk|iter_errors|validate_python", 14)


def mcp_stdio(calls: int, rounds: int) -> None:
    sys.path.insert(0, str(Path(__file__).parent))
    import connectors_mcp

    with tempfile.TemporaryDirectory() as folder:
        script = Path(folder) / "bench_server.py"
        script.write_text(connectors_mcp.SERVER)
        bare, host = connectors_mcp.samples("stdio", script, calls, 1)
        bare_us, host_us = [], []
        for _ in range(rounds):
            bare, host = connectors_mcp.samples("stdio", script, calls, 1)
            bare_us.append(statistics.fmean(bare) * 1e6)
            host_us.append(statistics.fmean(host) * 1e6)
    print(HEADER)
    print("|---|---:|---:|---:|---:|")
    row("MCP tool over stdio", bare_us, host_us)
    connectors_mcp._parts()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=9)
    parser.add_argument("--profile", action="store_true")
    parser.add_argument("--no-mcp", action="store_true", help="skip the MCP stdio part")
    parser.add_argument("--serve", type=int, default=None, help=argparse.SUPPRESS)
    options = parser.parse_args()
    if options.serve is not None:
        uvicorn.run(app(), host="127.0.0.1", port=options.serve, log_level="critical")
        return
    print(
        f"{options.rounds} rounds x {options.calls} calls, CPython {sys.version.split()[0]}, "
        f"load average {' '.join(f'{x:.1f}' for x in os.getloadavg())}"
    )
    url, server = serve()
    try:
        network = http_cases(url, None)
        memory = http_cases(url, httpx.MockTransport(in_memory))
        alone = host_alone(url)
        print("\nHTTP over 127.0.0.1 (uvicorn), and over httpx.MockTransport (in memory):\n")
        print(HEADER)
        print("|---|---:|---:|---:|---:|")
        trips: dict[str, dict[str, float]] = {}
        for name in network:
            calls, rounds = options.calls, options.rounds
            trips[name] = row(f"{name}, network", *interleaved(*network[name], calls, rounds))
            row(f"{name}, in memory", *interleaved(*memory[name], calls, rounds))
        print("\nThe host's own work (the client's answer prepared), against the round trip:\n")
        print("| call | host work µs (median / min) | share of the network round trip |")
        print("|---|---:|---:|")
        for name, call in alone.items():
            per_call_us(call, options.calls)
            work = [per_call_us(call, options.calls) for _ in range(options.rounds)]
            med, low = statistics.median(work), min(work)
            trip = trips[name]
            print(
                f"| {name} | {med:.1f} / {low:.1f} | {med / trip['bare_med']:.1%} of the median "
                f"({trip['bare_med']:.0f} µs), {low / trip['bare_min']:.1%} of the fastest "
                f"({trip['bare_min']:.0f} µs) |"
            )
    finally:
        server.terminate()
        server.wait(10)
    if options.profile:
        for name, call in alone.items():
            print(f"\nwhere the host's own time goes, {name} (cProfile):")
            profile_host(call, 3000)
    if not options.no_mcp:
        print("\nMCP over stdio (interleaved: a batch of bare calls, then a batch via the host):\n")
        mcp_stdio(options.calls, max(3, options.rounds // 2))


if __name__ == "__main__":
    main()
