"""The Starlette application and `serve`, which runs it under uvicorn."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager

from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import Response, StreamingResponse
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from keep_sdk.app import Installation
from keep_sdk.console._api import API
from keep_sdk.console._console import STATIC, Console
from keep_sdk.console._live import fingerprint, stream
from keep_sdk.console._pages import PAGES
from keep_sdk.console._settings import ConsoleSettings, check_bind
from keep_sdk.console._web import console_of, json_error, signed_in

__all__ = ["create_app", "serve"]


async def _live(request: Request) -> Response:
    """``/live``: server-sent ``change`` events while the page is open."""
    if not signed_in(request):
        return json_error(401, "sign in first: open the link `keep serve` printed")
    console = console_of(request)
    store = console.installation.store
    return StreamingResponse(
        stream(
            lambda: fingerprint(store),
            interval_s=console.settings.live_interval_s,
            stopped=request.is_disconnected,
        ),
        media_type="text/event-stream",
        headers={"Cache-Control": "no-store", "X-Accel-Buffering": "no"},
    )


async def _metrics(request: Request) -> Response:
    """``/metrics``: the store's gauges in the Prometheus text format, for the bearer token
    (``bearer_token`` in a Prometheus scrape config), like the JSON API."""
    if not signed_in(request, api=True):
        return json_error(401, "missing or wrong token: send Authorization: Bearer TOKEN")
    state = request.app.state
    if getattr(state, "metrics", None) is None:
        import importlib.util

        if importlib.util.find_spec("prometheus_client") is None:
            return json_error(
                501, "metrics need prometheus_client: pip install 'keep-sdk[metrics]'"
            )
        from keep_sdk.telemetry import KeepMetrics

        state.metrics = KeepMetrics(console_of(request).installation.store)
    body = await run_in_threadpool(state.metrics.render)
    return Response(body, media_type="text/plain; version=0.0.4; charset=utf-8")


_HEADERS = [
    (
        b"content-security-policy",
        b"default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; "
        b"img-src 'self' data:; frame-ancestors 'none'; form-action 'self'",
    ),
    (b"x-content-type-options", b"nosniff"),
    (b"referrer-policy", b"no-referrer"),
]


class _SecurityHeaders:
    """Adds a strict Content-Security-Policy (scripts only from the console) and friends."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return

        async def sending(message: Message) -> None:
            if message["type"] == "http.response.start":
                message["headers"] = [*message.get("headers", []), *_HEADERS]
            await send(message)

        await self.app(scope, receive, sending)


def create_app(settings: ConsoleSettings, installation: Installation | None = None) -> Starlette:
    """The console for `settings`: on `installation` (closed by the caller), or on one it
    opens at `settings.store_url` (which must exist) and closes when the app stops."""
    owned = installation is None

    @asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        try:
            yield
        finally:
            if owned:
                app.state.console.installation.close()

    inst = installation or Installation.open(
        settings.store_url, isolation=settings.isolation, must_exist=True
    )
    routes = [
        Route("/", PAGES["workflows"]),
        Route("/login", PAGES["login"]),
        Route("/workflows/{name}", PAGES["workflow"]),
        Route("/events", PAGES["events"]),
        Route("/runs", PAGES["runs"]),
        Route("/runs/{run_id}", PAGES["run"]),
        Route("/ledger", PAGES["ledger"]),
        Route("/actions", PAGES["act"], methods=["POST"]),
        Route("/live", _live),
        Route("/metrics", _metrics),
        Route("/api/openapi.json", API["openapi"]),
        Route("/api/status", API["status"]),
        Route("/api/workflows/{name}/flow", API["flow"]),
        Route("/api/events", API["events"]),
        Route("/api/runs", API["runs"]),
        Route("/api/runs/{run_id}", API["run"]),
        Route("/api/ledger", API["ledger"]),
        Route("/api/actions", API["actions"], methods=["POST"]),
        Route("/api/notify/{correlation_key}", API["notify"], methods=["POST"]),
        Mount("/static", StaticFiles(directory=STATIC), name="static"),
    ]
    app = Starlette(routes=routes, lifespan=lifespan, middleware=[Middleware(_SecurityHeaders)])
    app.state.console = Console(settings, inst)
    return app


def serve(
    settings: ConsoleSettings,
    *,
    token_configured: bool,
    announce: Callable[[str], None] = print,
    installation: Installation | None = None,
) -> None:
    """Serve the console until interrupted; refuses a non-loopback host without a configured
    token (`ConfigurationError`). `announce` gets the sign-in link once the store is open.
    The console acts on `installation` (closed by the caller) when given, else on one it
    opens at `settings.store_url`."""
    import uvicorn

    check_bind(settings.host, token_configured=token_configured)
    app = create_app(settings, installation=installation)
    host = f"[{settings.host}]" if ":" in settings.host else settings.host
    announce(f"http://{host}:{settings.port}/login?token={settings.token}")
    uvicorn.run(
        app,
        host=settings.host,
        port=settings.port,
        log_level="warning",
        timeout_graceful_shutdown=2,
    )
