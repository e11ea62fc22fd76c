"""``keep worker``'s observability: ``--metrics-port`` (``/metrics``, ``/healthz``) and
``--otel`` (run traces), wired as observer plugins of the opened installation."""

from __future__ import annotations

import importlib.util
import os
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar

import click

from keep_sdk.cli.support import EXIT_USAGE, fail

if TYPE_CHECKING:
    from keep_sdk.app import Installation
    from keep_sdk.telemetry import KeepMetrics

__all__ = ["Watch", "observability_options", "watching"]

F = TypeVar("F", bound=Callable[..., Any])

DEFAULT_HEALTHY_WITHIN_S = 120.0


def observability_options(func: F) -> F:
    """``--metrics-port``, ``--metrics-host``, ``--healthy-within`` and ``--otel``."""
    for option in reversed(
        (
            click.option(
                "--metrics-port",
                type=click.IntRange(0, 65535),
                default=None,
                help="Serve Prometheus /metrics and /healthz on this port (needs "
                "keep-sdk[metrics]).",
            ),
            click.option(
                "--metrics-host",
                default="127.0.0.1",
                show_default=True,
                help="Address the metrics port listens on.",
            ),
            click.option(
                "--healthy-within",
                type=click.FloatRange(min=1),
                default=DEFAULT_HEALTHY_WITHIN_S,
                show_default=True,
                help="/healthz answers 200 while the loop progressed within this many seconds.",
            ),
            click.option(
                "--otel",
                is_flag=True,
                help="Export one OpenTelemetry trace per run (needs keep-sdk[otel] and an "
                "exporter: OTLP over HTTP, or OTEL_TRACES_EXPORTER=console).",
            ),
        )
    ):
        func = option(func)
    return func


@dataclass
class Watch:
    """What the worker's loop tells the metrics: a step finished, a store error, an outage
    of the store begun and recovered (a `keep_sdk.scheduler.OutageWatcher`)."""

    metrics: KeepMetrics | None = None
    port: int | None = None

    def progressed(self) -> None:
        """The loop finished a step."""
        if self.metrics is not None:
            self.metrics.progressed()

    def store_error(self) -> None:
        """The loop carried on after an error."""
        if self.metrics is not None:
            self.metrics.store_error()

    def outage_began(self) -> None:
        """The loop lost the store."""
        if self.metrics is not None:
            self.metrics.outage_began()

    def outage_recovered(self, lasted_s: float) -> None:
        """The store answered again after `lasted_s` seconds."""
        if self.metrics is not None:
            self.metrics.outage_recovered(lasted_s)


def _installed(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is not None
    except ModuleNotFoundError:
        return False


def _needs(module: str, extra: str, option: str) -> None:
    if not _installed(module):
        fail(f"{option} needs {module}: pip install 'keep-sdk[{extra}]'", code=EXIT_USAGE)


def _tracer_provider() -> Any:
    from opentelemetry import trace
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import (
        BatchSpanProcessor,
        ConsoleSpanExporter,
        SimpleSpanProcessor,
    )

    current = trace.get_tracer_provider()
    if isinstance(current, TracerProvider):
        return current
    provider = TracerProvider()
    if os.environ.get("OTEL_TRACES_EXPORTER", "").strip() == "console":
        provider.add_span_processor(SimpleSpanProcessor(ConsoleSpanExporter()))
        return provider
    otlp = "opentelemetry.exporter.otlp.proto.http.trace_exporter"
    if not _installed("opentelemetry.exporter.otlp.proto.http"):
        fail(
            "--otel exports over OTLP/HTTP: pip install opentelemetry-exporter-otlp-proto-http "
            "(configured by OTEL_EXPORTER_OTLP_ENDPOINT), or set OTEL_TRACES_EXPORTER=console",
            code=EXIT_USAGE,
        )
    exporter = importlib.import_module(otlp).OTLPSpanExporter()
    provider.add_span_processor(BatchSpanProcessor(exporter))
    return provider


@contextmanager
def watching(
    inst: Installation,
    *,
    metrics_port: int | None,
    metrics_host: str,
    healthy_within: float,
    otel: bool,
) -> Iterator[Watch]:
    """Register the metrics and tracing observers on `inst`'s plugins for the block, serve
    the metrics port, and print where; unregistered and closed when the block ends."""
    watch = Watch()
    with ExitStack() as stack:
        if metrics_port is not None:
            _needs("prometheus_client", "metrics", "--metrics-port")
            from keep_sdk.errors import ConfigurationError
            from keep_sdk.telemetry import KeepMetrics, MetricsServer

            watch.metrics = KeepMetrics(inst.store)
            try:
                server = MetricsServer(
                    watch.metrics,
                    host=metrics_host,
                    port=metrics_port,
                    healthy_within_s=healthy_within,
                )
            except ConfigurationError as exc:
                fail(str(exc), code=EXIT_USAGE)
            stack.callback(server.close)
            inst.plugins.register(watch.metrics, name="keep-metrics")
            stack.callback(inst.plugins.pm.unregister, watch.metrics)
            watch.port = server.port
            click.echo(f"metrics on http://{metrics_host}:{server.port}/metrics", err=True)
        if otel:
            _needs("opentelemetry.sdk", "otel", "--otel")
            from keep_sdk.telemetry import RunTracer

            provider = _tracer_provider()
            tracer = RunTracer(provider, redact=inst.config.redact)
            inst.plugins.register(tracer, name="keep-traces")
            stack.callback(provider.force_flush)
            stack.callback(tracer.close)
            stack.callback(inst.plugins.pm.unregister, tracer)
        yield watch
