"""Overhead of an HTTP connector call over a bare httpx call to the same local server.

    python benchmarks/connectors.py [--calls 300] [--rounds 7]

A Starlette app under uvicorn (its own process) on 127.0.0.1 answers ``GET /contacts/{id}`` and
``POST /notes``. Each round makes `calls` calls of each kind, interleaved: a bare
`httpx.Client` request (the baseline), and the same request through the
connector (`Connector.invoke`: JSON Schema check of the arguments, path
encoding, call limits, classification, redaction of the result). Prints the
median µs per call of each, the overhead in µs and its ratio to the baseline.
The goal (issue 14): overhead ≤ 10% of a local HTTP round trip.
"""

from __future__ import annotations

import argparse
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import httpx
import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from keep_sdk.config import load_config
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


async def contact(request: Request) -> JSONResponse:
    return JSONResponse({"id": request.path_params["cid"], "name": "Ada", "tags": ["a", "b"]})


async def note(request: Request) -> JSONResponse:
    body = await request.json()
    return JSONResponse({"noteId": "n1", "text": body["text"]}, status_code=201)


def app() -> Starlette:
    return Starlette(
        routes=[Route("/contacts/{cid}", contact), Route("/notes", note, methods=["POST"])]
    )


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


def per_call_us(func: Callable[[], object], calls: int) -> float:
    started = time.perf_counter()
    for _ in range(calls):
        func()
    return (time.perf_counter() - started) / calls * 1e6


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=300)
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--serve", type=int, default=None, help=argparse.SUPPRESS)
    options = parser.parse_args()
    if options.serve is not None:
        uvicorn.run(app(), host="127.0.0.1", port=options.serve, log_level="critical")
        return
    url, server = serve()
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "keep.toml"
        path.write_text(CONFIG.format(url=url))
        types = {t.name: t for t in BUILTIN_CONNECTOR_TYPES}
        [crm] = load_config(path, types=types, environ={"CRM_TOKEN": TOKEN}).build_connectors()
    bare = httpx.Client(base_url=url, headers={"Authorization": f"Bearer {TOKEN}"})
    cases: dict[str, tuple[Callable[[], object], Callable[[], object]]] = {
        "read (GET /contacts/c1)": (
            lambda: bare.get("/contacts/c1").json(),
            lambda: crm.invoke("getContact", {"id": "c1"}),
        ),
        "mutation (POST /notes)": (
            lambda: bare.post(
                "/notes", json={"text": "hi"}, headers={"Idempotency-Key": "k"}
            ).json(),
            lambda: crm.invoke("addNote", {"text": "hi"}, idempotency_key="keep-k"),
        ),
    }
    for name, (baseline, connector) in cases.items():
        for func in (baseline, connector):
            per_call_us(func, 50)
        base_times, conn_times = [], []
        for _ in range(options.rounds):
            base_times.append(per_call_us(baseline, options.calls))
            conn_times.append(per_call_us(connector, options.calls))
        base, conn = statistics.median(base_times), statistics.median(conn_times)
        print(
            f"{name}: bare httpx {base:.0f} µs, connector {conn:.0f} µs, "
            f"overhead {conn - base:.0f} µs, ratio {conn / base:.3f}"
        )
    bare.close()
    crm.close()  # type: ignore[attr-defined]
    server.terminate()
    server.wait(10)


if __name__ == "__main__":
    main()
