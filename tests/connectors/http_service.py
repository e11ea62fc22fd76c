"""A small HTTP API for the HTTP connector tests: Starlette under uvicorn on 127.0.0.1.

It keeps notes keyed by ``Idempotency-Key`` (a repeated key returns the first
note), requires a bearer token, and can be told to answer the next requests
with a failure: a status (with ``Retry-After``), a hang, "applied, then the
connection dropped" (the note is stored, then the response breaks off), or
"applied, then hang". ``/_received`` lists what it received.
"""

from __future__ import annotations

import asyncio
import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import unquote

import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route
from starlette.types import Receive, Scope, Send


@dataclass
class ServiceState:
    token: str
    notes: dict[str, dict[str, Any]] = field(default_factory=dict)
    contacts: dict[str, dict[str, Any]] = field(default_factory=dict)
    received: list[dict[str, Any]] = field(default_factory=list)
    faults: list[dict[str, Any]] = field(default_factory=list)
    in_flight: int = 0
    max_in_flight: int = 0
    starts: list[float] = field(default_factory=list)


class _Dropped(Exception):
    """Raised after a partial response so uvicorn aborts the connection."""


def build_app(state: ServiceState) -> Starlette:
    def authorized(request: Request) -> bool:
        return request.headers.get("authorization") == f"Bearer {state.token}"

    async def fault_for(request: Request) -> dict[str, Any] | None:
        for fault in state.faults:
            if fault["path"] == request.url.path and fault["times"] > 0:
                fault["times"] -= 1
                return fault
        return None

    async def record(request: Request) -> Any:
        body = await request.json() if request.method in ("POST", "PUT", "PATCH") else None
        state.received.append(
            {
                "method": request.method,
                "path": request.url.path,
                "query": dict(request.query_params),
                "idempotencyKey": request.headers.get("idempotency-key"),
                "body": body,
            }
        )
        return body

    async def get_contact(request: Request) -> Response:
        await record(request)
        if not authorized(request):
            return JSONResponse({"error": "bad token"}, status_code=401)
        fault = await fault_for(request)
        if fault is not None:
            if fault["kind"] == "status":
                headers = {"Retry-After": fault["retry_after"]} if fault.get("retry_after") else {}
                return JSONResponse({"error": "injected"}, fault["status"], headers=headers)
            if fault["kind"] == "hang":
                await asyncio.sleep(fault["seconds"])
        segments = request.scope["raw_path"].decode("ascii").split("/")
        if len(segments) != 3:
            return JSONResponse({"error": "not one path segment"}, status_code=400)
        contact = state.contacts.get(unquote(segments[2]))
        if contact is None:
            return JSONResponse({"error": "no such contact"}, status_code=404)
        return JSONResponse(contact)

    async def slow(request: Request) -> Response:
        await record(request)
        state.starts.append(time.monotonic())
        state.in_flight += 1
        state.max_in_flight = max(state.max_in_flight, state.in_flight)
        await asyncio.sleep(0.2)
        state.in_flight -= 1
        return JSONResponse({"ok": True})

    async def echo_auth(request: Request) -> Response:
        await record(request)
        return JSONResponse({"youSent": request.headers.get("authorization")})

    async def note_by_key(request: Request) -> Response:
        await record(request)
        if not authorized(request):
            return JSONResponse({"error": "bad token"}, status_code=401)
        note = state.notes.get(request.path_params["key"])
        return JSONResponse(note) if note else JSONResponse({"error": "none"}, status_code=404)

    async def add_note_app(scope: Scope, receive: Receive, send: Send) -> None:
        request = Request(scope, receive)
        body = await record(request)
        if not authorized(request):
            await JSONResponse({"error": "bad token"}, status_code=401)(scope, receive, send)
            return
        fault = await fault_for(request)
        if fault is not None and fault["kind"] == "status":
            headers = {"Retry-After": fault["retry_after"]} if fault.get("retry_after") else {}
            response = JSONResponse({"error": "injected " + str(fault["status"])}, fault["status"])
            response.headers.update(headers)
            await response(scope, receive, send)
            return
        if not body or not body.get("text"):
            echoed = {"error": "text is required", "auth": request.headers.get("authorization")}
            await JSONResponse(echoed, 422)(scope, receive, send)
            return
        key = request.headers.get("idempotency-key") or ""
        note = state.notes.setdefault(
            key, {"noteId": f"note-{len(state.notes) + 1}", "text": body["text"], "key": key}
        )
        if fault is not None and fault["kind"] == "drop_after_apply":
            await send(
                {
                    "type": "http.response.start",
                    "status": 201,
                    "headers": [
                        (b"content-type", b"application/json"),
                        (b"content-length", b"500"),
                    ],
                }
            )
            await send({"type": "http.response.body", "body": b'{"noteId', "more_body": True})
            raise _Dropped("connection dropped on purpose")
        if fault is not None and fault["kind"] == "hang":
            await asyncio.sleep(fault["seconds"])
        await JSONResponse(note, status_code=201)(scope, receive, send)

    async def control(request: Request) -> Response:
        state.faults.append(await request.json())
        return JSONResponse({"ok": True})

    async def contacts_app(scope: Scope, receive: Receive, send: Send) -> None:
        response = await get_contact(Request(scope, receive))
        await response(scope, receive, send)

    routed = Starlette(
        routes=[
            Route("/slow", slow),
            Route("/echo-auth", echo_auth),
            Route("/notes/by-key/{key}", note_by_key),
            Route("/_fault", control, methods=["POST"]),
        ]
    )

    async def app(scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and scope["raw_path"].startswith(b"/contacts/"):
            await contacts_app(scope, receive, send)
        elif scope["type"] == "http" and scope["path"] == "/notes" and scope["method"] == "POST":
            await add_note_app(scope, receive, send)
        else:
            await routed(scope, receive, send)

    return app  # type: ignore[return-value]


@dataclass
class RunningService:
    url: str
    state: ServiceState

    def fault(self, path: str, kind: str, *, times: int = 1, **details: Any) -> None:
        self.state.faults.append({"path": path, "kind": kind, "times": times, **details})


@contextmanager
def running_service(token: str) -> Iterator[RunningService]:
    """The service on a free loopback port, stopped on exit."""
    state = ServiceState(token=token)
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    config = uvicorn.Config(build_app(state), log_level="critical", lifespan="off")
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    deadline = time.monotonic() + 20
    while not server.started:
        if time.monotonic() > deadline or not thread.is_alive():
            raise RuntimeError("the test HTTP service did not start")
        time.sleep(0.01)
    try:
        yield RunningService(f"http://127.0.0.1:{port}", state)
    finally:
        server.should_exit = True
        thread.join(10)
        sock.close()
