"""The HTTP connector against a hostile server on 127.0.0.1: bombs, floods, drips, redirects
away, and a credential echoed back in every encoding."""

from __future__ import annotations

import base64
import threading
import time
import tracemalloc
import zlib
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import quote

import pytest

from keep_sdk.connectors.http import HttpSettings, build
from keep_sdk.connectors.secrets import Secret
from keep_sdk.errors import KeepError, PermissionDenied, PreconditionFailed, TransientError

TOKEN = "hostile-Token/+ -0123456789"
CAP = 64 * 1024
Answer = Callable[[BaseHTTPRequestHandler], None]


def _send(handler: BaseHTTPRequestHandler, status: int, body: bytes, **headers: str) -> None:
    handler.send_response(status)
    for name, value in {"Content-Length": str(len(body)), **headers}.items():
        handler.send_header(name.replace("_", "-"), value)
    handler.end_headers()
    handler.wfile.write(body)


def _bomb() -> bytes:
    packer = zlib.compressobj(9, zlib.DEFLATED, 16 + zlib.MAX_WBITS)
    zeros = b"0" * (1024 * 1024)
    return b"".join([*(packer.compress(zeros) for _ in range(64)), packer.flush()])


BOMB = _bomb()


def gzip_bomb(handler: BaseHTTPRequestHandler) -> None:
    _send(handler, 200, BOMB, Content_Encoding="gzip")


def flood(handler: BaseHTTPRequestHandler) -> None:
    handler.send_response(200)
    handler.end_headers()
    chunk = b"x" * 65536
    try:
        for _ in range(2000):
            handler.wfile.write(chunk)
    except OSError:
        return


def drip(handler: BaseHTTPRequestHandler) -> None:
    handler.send_response(200)
    handler.send_header("Content-Length", "1000")
    handler.end_headers()
    try:
        for _ in range(1000):
            handler.wfile.write(b" ")
            handler.wfile.flush()
            time.sleep(0.3)
    except OSError:
        return


def away(handler: BaseHTTPRequestHandler) -> None:
    _send(handler, 302, b"", Location="http://127.0.0.2:9/steal")


def echo(encoding: Callable[[str], str]) -> Answer:
    def answer(handler: BaseHTTPRequestHandler) -> None:
        said = handler.headers.get("Authorization", "").removeprefix("Bearer ")
        _send(handler, 403, ('{"error": "bad token ' + encoding(said) + '"}').encode())

    return answer


def _escaped(text: str) -> str:
    return "".join(f"\\u{ord(c):04X}" for c in text)


@pytest.fixture
def hostile() -> Iterator[Callable[[Answer], str]]:
    servers: list[ThreadingHTTPServer] = []

    def serve(answer: Answer) -> str:
        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                answer(self)

            def log_message(self, *args: object) -> None:
                return

        server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        server.daemon_threads = True
        threading.Thread(target=server.serve_forever, daemon=True).start()
        servers.append(server)
        return f"http://127.0.0.1:{server.server_address[1]}"

    yield serve
    for server in servers:
        server.shutdown()
        server.server_close()


def _connector(base_url: str, *, timeout_s: float = 5.0):  # type: ignore[no-untyped-def]
    settings = HttpSettings.model_validate(
        {
            "base_url": base_url,
            "headers": {"Authorization": Secret(f"Bearer {TOKEN}", parts=(TOKEN,))},
            "timeout_s": timeout_s,
            "read_retries": 0,
            "max_response_bytes": CAP,
            "operations": {"get": {"kind": "read", "path": "/x"}},
        }
    )
    return build("api", settings)


def _failure(base_url: str, *, timeout_s: float = 5.0) -> KeepError:
    connector = _connector(base_url, timeout_s=timeout_s)
    try:
        with pytest.raises(KeepError) as caught:
            connector.invoke("get", {})
    finally:
        connector.close()
    return caught.value


@pytest.mark.parametrize("answer", [gzip_bomb, flood], ids=["gzip-bomb", "flood"])
def test_a_body_past_the_cap_is_refused_without_holding_it(
    hostile: Callable[[Answer], str], answer: Answer
) -> None:
    connector = _connector(hostile(answer))
    tracemalloc.start()
    try:
        with pytest.raises(KeepError) as caught:
            connector.invoke("get", {})
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
        connector.close()
    error = caught.value
    assert isinstance(error, PreconditionFailed)
    assert "larger than max_response_bytes" in error.message
    assert peak < 8 * CAP + 2 * 1024 * 1024


def test_a_dripping_server_is_cut_off_at_the_call_deadline(
    hostile: Callable[[Answer], str],
) -> None:
    error = _failure(hostile(drip), timeout_s=1.0)
    assert isinstance(error, TransientError)
    assert "no complete answer" in error.message


def test_a_redirect_to_another_origin_is_not_followed(hostile: Callable[[Answer], str]) -> None:
    error = _failure(hostile(away))
    assert isinstance(error, PreconditionFailed)
    assert "redirected to another origin (http://127.0.0.2:9)" in error.message


@pytest.mark.parametrize(
    "encoding",
    [
        str,
        _escaped,
        lambda t: quote(t, safe=""),
        lambda t: base64.b64encode(t.encode()).decode(),
        lambda t: base64.urlsafe_b64encode(t.encode()).decode().rstrip("="),
    ],
    ids=["plain", "json-u-escapes", "percent", "base64", "base64url"],
)
def test_a_credential_echoed_back_in_any_encoding_is_masked(
    hostile: Callable[[Answer], str], encoding: Callable[[str], str]
) -> None:
    error = _failure(hostile(echo(encoding)))
    assert isinstance(error, PermissionDenied)
    assert "bad token ***" in error.message
    assert encoding(TOKEN) not in error.message
