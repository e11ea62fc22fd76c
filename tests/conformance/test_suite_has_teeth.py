"""The store suite fails each deliberately broken store, at the tests that guard its rule."""

from __future__ import annotations

import pytest

SUITE_MODULE = """
import pytest
from keep_sdk.conformance import StoreConformance
from keep_sdk.stores import SqlStore
from keep_sdk import stores as reference
from tests.conformance import broken_stores


class TestBroken(StoreConformance):
    supports_fault_injection = True
    supports_reopen = {reopen}
    backlog_size = 3000

    @pytest.fixture
    def store_url(self, tmp_path):
        return f"sqlite:///{{tmp_path}}/keep.db"

    @pytest.fixture
    def store(self, clock, store_url):
        cls = getattr(broken_stores, {name!r}, None) or getattr(reference, {name!r})
        store = cls(store_url, clock=clock) if issubclass(cls, SqlStore) else cls(clock=clock)
        yield store
        store.close()

    @pytest.fixture
    def reopen(self, store_url, clock):
        if not self.supports_reopen:
            pytest.skip("reopen is not declared")
        return lambda: SqlStore(store_url, clock=clock)
"""

CASES = {
    "RepublishingStore": (
        "publish or duplicate",
        {
            "test_repeat_after_reservation_is_a_duplicate_that_changes_nothing",
            "test_repeat_after_consumption_is_a_duplicate",
            "test_repeat_after_skip_is_a_duplicate",
        },
    ),
    "NonAtomicStore": (
        "all_or_nothing",
        {
            "test_a_consumer_commit_is_all_or_nothing",
            "test_a_producer_commit_is_all_or_nothing",
            "test_saving_a_prepare_result_is_all_or_nothing",
            "test_deploying_a_version_is_all_or_nothing",
        },
    ),
    "NonExclusiveReservationStore": (
        "reserv",
        {
            "test_reserving_an_event_that_is_not_pending_reserves_nothing",
            "test_reserving_consumed_or_skipped_events_is_refused",
            "test_reserving_unknown_ids_names_them_and_reserves_nothing",
        },
    ),
    "ManyActiveRunsStore": (
        "active or begins",
        {
            "test_a_second_active_run_is_refused_and_changes_nothing",
            "test_resuming_a_paused_run_is_refused_while_another_is_active",
            "test_exactly_one_of_many_threads_begins_a_run",
        },
    ),
    "LeaseWithoutCompareAndSwapStore": (
        "lease",
        {
            "test_a_lease_is_exclusive_until_it_expires",
            "test_exactly_one_of_racing_threads_takes_over_an_expired_lease",
        },
    ),
    "ScanningPeekStore": ("peek_cost", {"test_peek_cost_does_not_grow_with_consumed_events"}),
    "LazyLedgerStore": ("intent", {"test_an_intent_survives_a_reopen"}),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_the_suite_fails_a_broken_store(pytester: pytest.Pytester, name: str) -> None:
    selection, expected = CASES[name]
    pytester.makepyfile(
        test_broken=SUITE_MODULE.format(name=name, reopen=name == "LazyLedgerStore")
    )
    result = pytester.inline_run("-k", selection, "-p", "no:cacheprovider")
    failed = {report.nodeid.rsplit("::", 1)[-1] for report in result.getfailures()}
    assert expected <= failed, f"{name}: the suite did not catch {sorted(expected - failed)}"


def test_the_same_selections_pass_on_the_reference_store(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_reference=SUITE_MODULE.format(name="MemoryStore", reopen=False))
    selection = " or ".join(f"({s})" for s, _ in CASES.values())
    result = pytester.inline_run("-k", selection, "-p", "no:cacheprovider")
    passed, _, failed = result.listoutcomes()
    assert failed == []
    assert len(passed) >= sum(len(expected) for _, expected in CASES.values())
