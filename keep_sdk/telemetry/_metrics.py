"""Prometheus metrics of a keep process, fed by the ``observe`` hook, the worker's loop and
store reads at scrape time."""

from __future__ import annotations

import datetime as dt
import threading
import time
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

from keep_sdk.contract.observations import LedgerChanged, Observation, RunChanged
from keep_sdk.model import RunStatus
from keep_sdk.plugins import hookimpl
from keep_sdk.telemetry._readings import read

if TYPE_CHECKING:
    from prometheus_client.registry import CollectorRegistry

    from keep_sdk.stores import Store

__all__ = ["ENDED", "KeepMetrics"]

ENDED = frozenset(
    {RunStatus.COMMITTED, RunStatus.FAILED_LOGIC, RunStatus.FAILED_INTERNAL, RunStatus.CRASHED}
)
"""Statuses a run ends in; its latency is measured when it reaches one."""

_LATENCY_BUCKETS = (0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300, 1800, 3600, 86400)
_PHASE_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60)


class _StoreCollector:
    """Gauges read from the store when scraped: runs by status, parked runs, pending events
    per topic, due work, the newest run change. A read that fails counts a store error."""

    def __init__(self, store: Store, errors: Any, clock: Callable[[], dt.datetime]) -> None:
        self._store = store
        self._errors = errors
        self._clock = clock

    def collect(self) -> Iterator[Any]:
        from prometheus_client.core import GaugeMetricFamily

        up = GaugeMetricFamily("keep_store_up", "1 when the last scrape read the store, else 0")
        try:
            found = read(self._store, self._clock())
        except Exception:
            self._errors.labels(source="scrape").inc()
            up.add_metric([], 0)
            yield up
            return
        up.add_metric([], 1)
        yield up
        runs = GaugeMetricFamily(
            "keep_runs", "Runs in the store by status", labels=["workflow", "status"]
        )
        for (workflow, status), n in sorted(found.runs.items()):
            runs.add_metric([workflow, status], n)
        yield runs
        parked = GaugeMetricFamily(
            "keep_parked_runs", "Runs that wait (paused:*)", labels=["workflow", "status"]
        )
        for (workflow, status), n in sorted(found.parked.items()):
            parked.add_metric([workflow, status], n)
        yield parked
        pending = GaugeMetricFamily(
            "keep_events_pending",
            "Pending events on a topic a consumer subscribes to",
            labels=["workflow", "topic"],
        )
        for (workflow, topic), n in sorted(found.pending.items()):
            pending.add_metric([workflow, topic], n)
        yield pending
        due = GaugeMetricFamily(
            "keep_work_due", "Producers, wakes, resumes and reconciliations due"
        )
        due.add_metric([], found.due)
        yield due
        if found.last_progress is not None:
            newest = GaugeMetricFamily(
                "keep_last_run_change_timestamp_seconds", "The newest change to any run (Unix time)"
            )
            newest.add_metric([], found.last_progress.timestamp())
            yield newest


class KeepMetrics:
    """The metrics of one process in their own registry.

    Register the object as a plugin (`KeepPlugins.register`) to count what the runtime
    observes: run transitions, run latency (creation to end), phase durations,
    reconciliation rounds. The worker's loop calls `progressed` after each step and
    `store_error` for each error it carries on after; as the `OutageWatcher` of its retry
    policy (`keep_sdk.scheduler.Outage`) it also hears `outage_began` and
    `outage_recovered`, so ``keep_store_outages_total`` always equals
    ``keep_store_recoveries_total`` plus ``keep_store_outage`` (1 while one lasts). With a
    `store`, a scrape also reads the store's gauges. `render` is the text exposition format.
    """

    def __init__(
        self,
        store: Store | None = None,
        *,
        clock: Callable[[], dt.datetime] = lambda: dt.datetime.now(dt.UTC),
    ) -> None:
        from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

        self.registry: CollectorRegistry = CollectorRegistry()
        reg = self.registry
        self._transitions = Counter(
            "keep_run_transitions",
            "Runs that reached a status, as this process saw them",
            ["workflow", "status"],
            registry=reg,
        )
        self._latency = Histogram(
            "keep_run_latency_seconds",
            "From a run's creation to its end (committed, failed or crashed)",
            ["workflow", "kind", "status"],
            buckets=_LATENCY_BUCKETS,
            registry=reg,
        )
        self._phases = Histogram(
            "keep_phase_duration_seconds",
            "Wall-clock time of one handler phase",
            ["workflow", "phase"],
            buckets=_PHASE_BUCKETS,
            registry=reg,
        )
        self._reconcile = Counter(
            "keep_reconcile_rounds",
            "Reconciliation attempts of mutations",
            ["workflow", "connector"],
            registry=reg,
        )
        self._errors = Counter(
            "keep_store_errors", "Store errors carried on after", ["source"], registry=reg
        )
        self._errors.labels(source="worker")
        self._outages = Counter(
            "keep_store_outages",
            "Outages of the store the worker's loop lived through or lives in (begun)",
            registry=reg,
        )
        self._recoveries = Counter(
            "keep_store_recoveries",
            "Outages of the store that ended: the loop's first whole step after one",
            registry=reg,
        )
        self._outage = Gauge(
            "keep_store_outage",
            "1 while the worker's loop cannot reach the store, else 0",
            registry=reg,
        )
        self._recovered_at = Gauge(
            "keep_store_last_recovery_timestamp_seconds",
            "When the store last answered again after an outage (Unix time; 0: never)",
            registry=reg,
        )
        self._outage_seconds = Counter(
            "keep_store_outage_seconds",
            "Total length of the outages that ended",
            registry=reg,
        )
        self._progress = Gauge(
            "keep_last_progress_timestamp_seconds",
            "When the worker's loop last finished a step (Unix time)",
            registry=reg,
        )
        self._lock = threading.Lock()
        self._progressed_at: float | None = None
        self._phases_seen: dict[str, int] = {}
        if store is not None:
            reg.register(_StoreCollector(store, self._errors, clock))

    def progressed(self) -> None:
        """The worker's loop finished a step (did something, or found nothing due)."""
        with self._lock:
            self._progressed_at = time.monotonic()
        self._progress.set_to_current_time()

    def store_error(self) -> None:
        """The worker's loop carried on after a store error."""
        self._errors.labels(source="worker").inc()

    def outage_began(self) -> None:
        """The worker's loop lost the store (the first failed try of an outage)."""
        self._outages.inc()
        self._outage.set(1)

    def outage_recovered(self, lasted_s: float) -> None:
        """The store answered the loop again after an outage of `lasted_s` seconds."""
        self._recoveries.inc()
        self._outage_seconds.inc(max(0.0, lasted_s))
        self._outage.set(0)
        self._recovered_at.set_to_current_time()

    def healthy(self, within_s: float) -> bool:
        """Whether the loop progressed in the last `within_s` seconds."""
        with self._lock:
            at = self._progressed_at
        return at is not None and time.monotonic() - at <= within_s

    def render(self) -> bytes:
        """Every metric in the Prometheus text exposition format."""
        from prometheus_client import generate_latest

        return generate_latest(self.registry)

    @hookimpl
    def observe(self, observation: Observation) -> None:
        """Count a run or ledger change (the ``observe`` hook)."""
        if isinstance(observation, RunChanged):
            self._run(observation)
        elif isinstance(observation, LedgerChanged):
            entry, previous = observation.entry, observation.previous
            before = previous.reconcile_attempts if previous is not None else 0
            if entry.reconcile_attempts > before:
                self._reconcile.labels(workflow=entry.workflow, connector=entry.connector).inc(
                    entry.reconcile_attempts - before
                )

    def _run(self, change: RunChanged) -> None:
        run, previous = change.run, change.previous
        if previous is None or previous.status != run.status:
            self._transitions.labels(workflow=run.workflow, status=run.status.value).inc()
            if run.status in ENDED:
                took = (run.updated_at - run.created_at).total_seconds()
                self._latency.labels(
                    workflow=run.workflow, kind=run.kind.value, status=run.status.value
                ).observe(max(0.0, took))
        with self._lock:
            seen = self._phases_seen.get(run.id, len(previous.trace) if previous else 0)
            self._phases_seen[run.id] = len(run.trace)
            if run.status in ENDED:
                self._phases_seen.pop(run.id, None)
        for phase in run.trace[seen:]:
            self._phases.labels(workflow=run.workflow, phase=phase.phase.value).observe(
                phase.wall_time_s
            )
