"""Operating a keep installation with the ecosystem's tools: Prometheus metrics, OpenTelemetry
traces, a health endpoint and the store-derived stall check.

`KeepMetrics` and `RunTracer` are observer plugins (register them with
`KeepPlugins.register`); `MetricsServer` serves ``/metrics`` and ``/healthz``;
`check_stalled` answers ``keep status --check``. ``prometheus_client`` (extra
``metrics``) and ``opentelemetry-api``/``-sdk`` (extra ``otel``) are imported only
when the object that needs them is built.
"""

from keep_sdk.telemetry._metrics import KeepMetrics
from keep_sdk.telemetry._server import MetricsServer
from keep_sdk.telemetry._stall import Stall, check_stalled
from keep_sdk.telemetry._traces import RunTracer

__all__ = ["KeepMetrics", "MetricsServer", "RunTracer", "Stall", "check_stalled"]
