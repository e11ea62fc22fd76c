"""The metrics port: ``/metrics`` (Prometheus text) and ``/healthz`` on a small HTTP server."""

from __future__ import annotations

import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from keep_sdk.errors import ConfigurationError
from keep_sdk.telemetry._metrics import KeepMetrics

__all__ = ["MetricsServer"]

_TEXT = "text/plain; version=0.0.4; charset=utf-8"


class MetricsServer:
    """Serves `metrics` on `host`:`port` from a daemon thread until `close`.

    ``GET /metrics``: every metric. ``GET /healthz``: 200 ``ok`` while the worker's loop
    progressed within `healthy_within_s` seconds, else 503 ``stalled``. Anything else is
    404. `port` 0 picks a free port (`port` then says which). A port that cannot be bound
    is a `ConfigurationError`.
    """

    def __init__(
        self, metrics: KeepMetrics, *, host: str, port: int, healthy_within_s: float
    ) -> None:
        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                path = self.path.split("?", 1)[0]
                if path == "/metrics":
                    self._send(200, metrics.render(), _TEXT)
                elif path == "/healthz":
                    ok = metrics.healthy(healthy_within_s)
                    self._send(200 if ok else 503, b"ok\n" if ok else b"stalled\n")
                else:
                    self._send(404, b"not found: try /metrics or /healthz\n")

            def _send(self, code: int, body: bytes, kind: str = "text/plain") -> None:
                self.send_response(code)
                self.send_header("Content-Type", kind)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, format: str, *args: Any) -> None:
                return

        try:
            self._server = ThreadingHTTPServer((host, port), Handler)
        except OSError as exc:
            raise ConfigurationError(
                f"cannot serve metrics on {host}:{port}: {exc.strerror or exc}; "
                "choose another --metrics-port"
            ) from None
        self._server.daemon_threads = True
        self.host = host
        self.port: int = self._server.server_address[1]
        self._thread = threading.Thread(
            target=self._server.serve_forever, name="keep-metrics", daemon=True
        )
        self._thread.start()

    def close(self) -> None:
        """Stop serving and free the port."""
        self._server.shutdown()
        self._server.server_close()
