"""`KeepMetrics` counts what the runtime observes: reconciliation rounds, transitions, phases."""

from __future__ import annotations

import datetime as dt

from hypothesis import given
from hypothesis import strategies as st
from prometheus_client.parser import text_string_to_metric_families

from keep_sdk.contract.observations import LedgerChanged, RunChanged
from keep_sdk.model import HandlerKind, LedgerEntry, PhaseTrace, RunRecord, RunStatus
from keep_sdk.telemetry import KeepMetrics

NOW = dt.datetime(2026, 11, 26, tzinfo=dt.UTC)


def _value(metrics: KeepMetrics, sample: str, **labels: str) -> float:
    return sum(
        s.value
        for family in text_string_to_metric_families(metrics.render().decode())
        for s in family.samples
        if s.name == sample and labels.items() <= s.labels.items()
    )


def _entry(attempts: int) -> LedgerEntry:
    return LedgerEntry(
        id="l-1",
        run_id="r-1",
        workflow="w",
        handler="h",
        connector="sheets",
        operation="appendRow",
        params={},
        idempotency_key="keep-1",
        reconcile_attempts=attempts,
        created_at=NOW,
        updated_at=NOW,
    )


@given(st.lists(st.integers(min_value=0, max_value=5), max_size=8))
def test_reconcile_rounds_add_up_to_the_entrys_attempts(steps: list[int]) -> None:
    metrics = KeepMetrics()
    previous = _entry(0)
    metrics.observe(LedgerChanged(entry=previous))
    attempts = 0
    for step in steps:
        attempts += step
        entry = _entry(attempts)
        metrics.observe(LedgerChanged(entry=entry, previous=previous))
        previous = entry
    assert _value(metrics, "keep_reconcile_rounds_total", connector="sheets") == attempts


def test_a_run_counts_its_transitions_latency_and_each_phase_once() -> None:
    metrics = KeepMetrics()
    run = RunRecord(
        id="r-1",
        workflow="w",
        workflow_version=1,
        handler="h",
        kind=HandlerKind.CONSUMER,
        created_at=NOW,
        updated_at=NOW,
    )
    metrics.observe(RunChanged(run=run))
    prepared = run.model_copy(
        update={"trace": [PhaseTrace(phase="prepare", wall_time_s=0.2)], "updated_at": NOW}
    )
    metrics.observe(RunChanged(run=prepared, previous=run))
    done = prepared.model_copy(
        update={
            "status": RunStatus.COMMITTED,
            "trace": [*prepared.trace, PhaseTrace(phase="mutate", wall_time_s=0.3)],
            "updated_at": NOW + dt.timedelta(seconds=2),
        }
    )
    metrics.observe(RunChanged(run=done, previous=prepared))
    assert _value(metrics, "keep_run_transitions_total", status="active") == 1
    assert _value(metrics, "keep_run_transitions_total", status="committed") == 1
    assert _value(metrics, "keep_run_latency_seconds_count") == 1
    assert _value(metrics, "keep_run_latency_seconds_sum") == 2
    assert _value(metrics, "keep_phase_duration_seconds_count", phase="prepare") == 1
    assert _value(metrics, "keep_phase_duration_seconds_count", phase="mutate") == 1
    assert abs(_value(metrics, "keep_phase_duration_seconds_sum") - 0.5) < 1e-9


def test_health_follows_the_loop() -> None:
    metrics = KeepMetrics()
    assert not metrics.healthy(60)
    metrics.progressed()
    assert metrics.healthy(60)
    metrics.store_error()
    assert _value(metrics, "keep_store_errors_total", source="worker") == 1
