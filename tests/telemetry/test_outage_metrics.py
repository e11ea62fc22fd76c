"""The worker's retry policy feeds its metrics: an `Outage` watched by `KeepMetrics` counts
every transient store error, each outage once when it begins and once when it ends."""

from __future__ import annotations

import itertools

from hypothesis import given, settings
from hypothesis import strategies as st
from prometheus_client.parser import text_string_to_metric_families

from keep_sdk.scheduler import Outage, OutageWatcher, RetryPolicy
from keep_sdk.telemetry import KeepMetrics


def _samples(metrics: KeepMetrics) -> dict[str, float]:
    return {
        s.name: s.value
        for family in text_string_to_metric_families(metrics.render().decode())
        for s in family.samples
        if not s.labels or s.labels.get("source") == "worker"
    }


@settings(max_examples=60, deadline=None)
@given(st.lists(st.booleans(), max_size=40))
def test_outages_begun_are_recoveries_plus_the_one_that_lasts(tries: list[bool]) -> None:
    metrics = KeepMetrics()
    watcher: OutageWatcher = metrics
    outage = Outage(RetryPolicy(base_s=0.01, cap_s=0.02), watcher)
    for worked in tries:
        if worked:
            outage.ended()
        else:
            outage.failed()
    runs = [failed for failed, _ in itertools.groupby(not worked for worked in tries)]
    begun = sum(runs)
    lasting = bool(tries) and not tries[-1]
    found = _samples(metrics)
    assert found["keep_store_outages_total"] == begun
    assert found["keep_store_recoveries_total"] == begun - lasting
    assert found["keep_store_outage"] == lasting
    assert found["keep_store_errors_total"] == tries.count(False)
    assert (found["keep_store_last_recovery_timestamp_seconds"] > 0) == (begun - lasting > 0)
