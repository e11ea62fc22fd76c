"""Each broken store of `capability_bugs` shows its bug live, and the store suite fails it.

`test_the_bug_is_live` makes direct store calls that expose the mistake on the
broken store and not on the store it was derived from;
`test_the_suite_catches_every_broken_store` runs, in one pytest run, the clauses
named in `CASES` against each broken store and asserts every one of them fails.
"""

from __future__ import annotations

import datetime as dt
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from keep_sdk.conformance import ManualClock
from keep_sdk.conformance.stores._support import CONSUMER, PRODUCER, STANDARD_HANDLERS
from keep_sdk.contract.durable import Pending, derive_invocation
from keep_sdk.errors import ActiveRunExists
from keep_sdk.model import (
    HandlerKind,
    PrepareResult,
    Reservation,
    RunPhase,
    RunStatus,
)
from keep_sdk.stores import MemoryStore, Publication, SqlStore
from tests.conformance import capability_bugs

SUITE_HEADER = """
import pytest
from keep_sdk.conformance import StoreConformance
from keep_sdk.stores import SqlStore
from tests.conformance import capability_bugs


def open_broken(name, clock, url):
    cls = getattr(capability_bugs, name)
    return cls(url, clock=clock) if issubclass(cls, SqlStore) else cls(clock=clock)
"""

SUITE_CLASS = """

class TestBroken_{name}(StoreConformance):
    supports_durable = True
    supports_reopen = {sql}
    supports_reading_snapshots = {sql}
    backlog_size = 3000

    @pytest.fixture
    def store_url(self, tmp_path):
        return f"sqlite:///{{tmp_path}}/keep.db"

    @pytest.fixture
    def store(self, clock, store_url):
        store = open_broken({name!r}, clock, store_url)
        yield store
        store.close()
"""

CASES: dict[str, set[str]] = {
    # broken store: the suite's tests that must fail against it
    "PageSkipsBoundaryRowStore": {"test_event_pages_are_full_and_complete_under_every_filter"},
    "PageFiltersAfterLimitStore": {"test_event_pages_are_full_and_complete_under_every_filter"},
    "PageCreatedByIgnoredStore": {"test_event_pages_are_full_and_complete_under_every_filter"},
    "RunPagesDropStatusStore": {
        "test_run_and_ledger_pages_are_full_and_complete_under_every_filter"
    },
    "LedgerPagesOfEveryWorkflowStore": {
        "test_run_and_ledger_pages_are_full_and_complete_under_every_filter"
    },
    "CountsEveryWorkflowStore": {
        "test_counts_change_at_once_after_every_write_and_stay_per_workflow"
    },
    "StaleCountCacheStore": {"test_counts_change_at_once_after_every_write_and_stay_per_workflow"},
    "CountsWithoutActiveRunsStore": {"test_counts_by_status_equal_the_listed_rows"},
    "CountsSkippedAsPendingStore": {
        "test_counts_change_at_once_after_every_write_and_stay_per_workflow"
    },
    "ClaimCheckThenActStore": {"test_exactly_one_of_racing_threads_claims_a_free_invocation"},
    "ClaimNeverExpiresStore": {"test_exactly_one_of_racing_threads_takes_over_an_expired_claim"},
    "ClaimedInvocationsNeverExpireStore": {
        "test_an_invocation_whose_poll_claim_expired_still_times_out",
        "test_an_invocation_claimed_past_its_timeout_still_times_out",
    },
    "ClaimBlocksTimeoutStore": {
        "test_an_invocation_whose_poll_claim_expired_still_times_out",
        "test_an_invocation_claimed_past_its_timeout_still_times_out",
    },
    "DuePollsIgnoreTimeStore": {
        "test_scans_use_the_instant_and_limit_given_and_lists_filter_together"
    },
    "AutocommitReadingStore": {
        "test_another_stores_commit_is_not_visible_inside_one_reading_block"
    },
    "ReadingBypassedByListEventsStore": {
        "test_another_stores_commit_is_not_visible_inside_one_reading_block"
    },
    "PausedProducersDueStore": {"test_planning_queries_over_many_workflows_match_the_model"},
    "DueProducersStrictlyBeforeStore": {
        "test_planning_queries_over_many_workflows_match_the_model"
    },
    "DueProducersCappedStore": {"test_planning_queries_over_many_workflows_match_the_model"},
    "DroppedProducersDueStore": {"test_planning_queries_over_many_workflows_match_the_model"},
    "WakeTimesIgnoredStore": {"test_planning_queries_over_many_workflows_match_the_model"},
    "DeployIfChangedUnlockedStore": {"test_racing_threads_deploy_the_same_source_once"},
    "PendingNewestFirstStore": {"test_pending_events_come_oldest_first_up_to_the_limit"},
    "ActiveRunsWithPausedStore": {"test_pending_parks_the_run_keeping_its_reservations"},
    "RenewalNewTokenStore": {"test_the_owner_renews_and_release_frees_the_lease"},
    "InsertRunUnguardedStore": {
        "test_a_merged_begin_is_refused_as_its_parts_are_and_writes_nothing",
        "test_of_merged_begins_racing_on_one_workflow_exactly_one_wins",
    },
    "EndingPausedRunBlockedStore": {"test_a_paused_run_changes_status_while_another_run_is_active"},
    "DeliveriesFilteredAfterLimitStore": {"test_deliveries_that_must_wait_do_not_use_up_the_page"},
    "UnmeasuredPeekStore": {"test_peek_cost_does_not_grow_with_consumed_events"},
}

HOUR = dt.timedelta(hours=1)


def _deploy(store: Any, name: str = "wf") -> str:
    store.deploy(name, "v1", {}, handlers=STANDARD_HANDLERS)
    return name


def _publish(
    store: Any, workflow: str, *ids: str, topic: str = "in", by: str | None = None
) -> None:
    for mid in ids:
        store.publish(workflow, Publication(topic=topic, message_id=mid, title=mid), created_by=by)


def _run(store: Any, workflow: str, *ids: str, topic: str = "in") -> str:
    run = store.begin_run(workflow, CONSUMER, HandlerKind.CONSUMER)
    reservations = [Reservation(topic=topic, ids=list(ids))] if ids else []
    store.save_prepare_result(run.id, PrepareResult(reservations=reservations))
    return str(run.id)


def _started(store: Any, name: str = "wf", timeout_at: dt.datetime | None = None) -> str:
    """A run of a new workflow `name` whose durable intent is recorded, not yet parked."""
    wf = _deploy(store, name)
    _publish(store, wf, "a")
    run_id = _run(store, wf, "a")
    store.advance_phase(run_id, RunPhase.MUTATING)
    invocation_id, key = derive_invocation(wf, CONSUMER, run_id)
    store.record_durable_intent(
        run_id,
        connector="approvals",
        operation="request",
        params={},
        idempotency_key=key,
        invocation_id=invocation_id,
        correlation_key=key,
        timeout_at=timeout_at,
    )
    return invocation_id


def _parked(store: Any, clock: ManualClock, timeout_at: dt.datetime | None = None) -> str:
    invocation_id = _started(store, timeout_at=timeout_at)
    store.record_start_answer(
        invocation_id, Pending(token="t"), next_poll_at=clock() + dt.timedelta(minutes=1)
    )
    return invocation_id


def _race(action: Callable[[int], object], n: int = 4) -> list[object]:
    barrier = threading.Barrier(n)
    results: list[object] = []

    def go(i: int) -> None:
        barrier.wait(10)
        results.append(action(i))

    threads = [threading.Thread(target=go, args=(i,)) for i in range(n)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    return results


def _ids(rows: Any) -> list[str]:
    return [r.message_id for r in rows]


def live_page_boundary(store: Any, clock: ManualClock) -> bool:
    wf = _deploy(store)
    _publish(store, wf, "m0", "m1", "m2", "m3")
    first = store.page_events(wf, limit=2)
    return _ids(store.page_events(wf, before=first[-1].id, limit=2)) != ["m1", "m0"]


def live_short_filtered_page(store: Any, clock: ManualClock) -> bool:
    wf = _deploy(store)
    _publish(store, wf, "a")
    _publish(store, wf, "b", topic="other")
    _publish(store, wf, "c")
    return _ids(store.page_events(wf, topic="in", limit=2)) != ["c", "a"]


def live_created_by(store: Any, clock: ManualClock) -> bool:
    wf = _deploy(store)
    _publish(store, wf, "a")
    run_id = _run(store, wf, "a")
    _publish(store, wf, "child", by=run_id)
    return _ids(store.page_events(wf, created_by=run_id, limit=5)) != ["child"]


def live_run_page_status(store: Any, clock: ManualClock) -> bool:
    wf = _deploy(store)
    store.commit_consumer_run(_run(store, wf))
    failed = _run(store, wf)
    store.set_run_status(failed, RunStatus.FAILED_LOGIC, error="x")
    found = store.page_runs(workflow=wf, status=RunStatus.FAILED_LOGIC, limit=5)
    return [r.id for r in found] != [failed]


def _entry(store: Any, wf: str) -> str:
    run_id = _run(store, wf)
    store.advance_phase(run_id, RunPhase.MUTATING)
    entry = store.record_mutation_intent(
        run_id, connector="s", operation="o", params={}, idempotency_key=run_id
    )
    return str(entry.id)


def live_ledger_workflow(store: Any, clock: ManualClock) -> bool:
    _entry(store, _deploy(store, "one"))
    mine = _entry(store, _deploy(store, "two"))
    return [e.id for e in store.page_ledger(workflow="two", limit=5)] != [mine]


def _two_workflows(store: Any) -> None:
    _publish(store, _deploy(store, "one"), "a")
    _publish(store, _deploy(store, "two"), "b", "c")


def live_counts_every_workflow(store: Any, clock: ManualClock) -> bool:
    _two_workflows(store)
    return bool(store.count_by_status("one").events != {"one": {"pending": 1}})


def live_stale_counts(store: Any, clock: ManualClock) -> bool:
    _two_workflows(store)
    store.count_by_status("two")
    store.skip_event(store.events_by_ids("two", "in", ["b"])[0].id, actor="ann")
    return bool(store.count_by_status("two").events != {"two": {"pending": 1, "skipped": 1}})


def live_counts_active(store: Any, clock: ManualClock) -> bool:
    wf = _deploy(store)
    store.begin_run(wf, CONSUMER, HandlerKind.CONSUMER)
    return bool(store.count_by_status(wf).runs != {wf: {"active": 1}})


def live_counts_skipped(store: Any, clock: ManualClock) -> bool:
    wf = _deploy(store)
    _publish(store, wf, "a")
    store.skip_event(store.events_by_ids(wf, "in", ["a"])[0].id, actor="ann")
    return bool(store.count_by_status(wf).events != {wf: {"skipped": 1}})


def live_claim_race(store: Any, clock: ManualClock) -> bool:
    invocation_id = _parked(store, clock)
    won = _race(lambda i: store.claim_invocation(invocation_id, f"w{i}", until=clock() + HOUR))
    return sum(1 for claim in won if claim is not None) > 1


def live_claim_never_expires(store: Any, clock: ManualClock) -> bool:
    invocation_id = _parked(store, clock)
    store.claim_invocation(invocation_id, "dead", until=clock() + HOUR)
    clock.advance(2 * 3600)
    return store.claim_invocation(invocation_id, "w2", until=clock() + HOUR) is None


def live_claimed_not_expired(store: Any, clock: ManualClock) -> bool:
    invocation_id = _parked(store, clock, timeout_at=clock() + HOUR)
    store.claim_invocation(invocation_id, "w1", until=clock() + dt.timedelta(minutes=5))
    clock.advance(2 * 3600)
    return invocation_id not in [i.id for i in store.expired_invocations(clock())]


def live_claim_blocks_timeout(store: Any, clock: ManualClock) -> bool:
    invocation_id = _parked(store, clock, timeout_at=clock() + HOUR)
    store.claim_invocation(invocation_id, "w1", until=clock() + dt.timedelta(minutes=5))
    clock.advance(2 * 3600)
    return store.time_out_invocation(invocation_id) is None


def live_due_polls(store: Any, clock: ManualClock) -> bool:
    invocation_id = _parked(store, clock)
    return invocation_id in [i.id for i in store.due_polls(clock())]


def live_snapshot(store: Any, clock: ManualClock) -> bool:
    wf = _deploy(store)
    other = SqlStore(store.url, clock=clock)
    try:
        with store.reading():
            store.list_events(wf)
            _publish(other, wf, "during")
            return _ids(store.list_events(wf)) != []
    finally:
        other.close()


def _producers(store: Any, clock: ManualClock) -> None:
    _deploy(store, "paused")
    store.pause_workflow("paused", actor="ops")
    _deploy(store, "dropped")
    store.deploy("dropped", "v2", {}, handlers=[h for h in STANDARD_HANDLERS if h.name != PRODUCER])
    for i in range(12):
        _deploy(store, f"live{i:02}")


def live_due_producers(store: Any, clock: ManualClock) -> bool:
    _producers(store, clock)
    expected = {f"live{i:02}" for i in range(12)}
    return {h.workflow for h in store.due_producers(clock())} != expected


def live_wake_at(store: Any, clock: ManualClock) -> bool:
    wf = _deploy(store)
    store.set_wake_at(wf, CONSUMER, clock())
    return [w.handler for w in store.consumers_to_wake(clock())] != [CONSUMER]


def live_deploy_race(store: Any, clock: ManualClock) -> bool:
    done = _race(lambda i: store.deploy_if_changed("wf", "same", {}, handlers=STANDARD_HANDLERS))
    return [answer[1] for answer in done if isinstance(answer, tuple)].count(True) > 1


def live_pending_order(store: Any, clock: ManualClock) -> bool:
    wf = _deploy(store)
    _publish(store, wf, "old", "new")
    return _ids(store.pending_events(wf, "in", limit=1)) != ["old"]


def live_unmeasured_peek(store: Any, clock: ManualClock) -> bool:
    small, large = _deploy(store, "small"), _deploy(store, "large")
    _publish(store, small, "only")
    _publish(store, large, *(f"m{i}" for i in range(40)))
    return store.peek_cost(small, "in", limit=40) == store.peek_cost(large, "in", limit=40)


def live_active_runs(store: Any, clock: ManualClock) -> bool:
    wf = _deploy(store)
    run_id = _run(store, wf)
    store.set_run_status(run_id, RunStatus.PAUSED_TRANSIENT, error="later")
    return run_id in [r.id for r in store.active_runs()]


def live_renewal_token(store: Any, clock: ManualClock) -> bool:
    wf = _deploy(store)
    first = store.acquire_lease(wf, "w1", ttl=dt.timedelta(seconds=30))
    again = store.acquire_lease(wf, "w1", ttl=dt.timedelta(seconds=30))
    return bool(again.token != first.token)


def live_merged_begin_unguarded(store: Any, clock: ManualClock) -> bool:
    wf = _deploy(store)
    store.begin_run(wf, PRODUCER, HandlerKind.PRODUCER)
    try:
        store.begin_consumer_run(wf, CONSUMER, run_id="run-second", prepare_result=None)
    except ActiveRunExists:
        return False
    return True


def live_ending_paused_run(store: Any, clock: ManualClock) -> bool:
    wf = _deploy(store)
    paused = store.begin_run(wf, CONSUMER, HandlerKind.CONSUMER)
    store.set_run_status(paused.id, RunStatus.PAUSED_TRANSIENT)
    store.begin_run(wf, PRODUCER, HandlerKind.PRODUCER)
    try:
        store.set_run_status(paused.id, RunStatus.FAILED_LOGIC, error="given up")
    except ActiveRunExists:
        return True
    return False


def live_deliveries_blocked(store: Any, clock: ManualClock) -> bool:
    key = store.get_invocation(_started(store, "early")).correlation_key
    for n in range(3):
        store.receive_notification(key, n, source="early")
    parked = store.get_invocation(_parked(store, clock))
    store.receive_notification(parked.correlation_key, "done", source="t")
    return store.deliverable_notifications(limit=2) == []


LIVE: dict[str, Callable[[Any, ManualClock], bool]] = {
    "PageSkipsBoundaryRowStore": live_page_boundary,
    "PageFiltersAfterLimitStore": live_short_filtered_page,
    "PageCreatedByIgnoredStore": live_created_by,
    "RunPagesDropStatusStore": live_run_page_status,
    "LedgerPagesOfEveryWorkflowStore": live_ledger_workflow,
    "CountsEveryWorkflowStore": live_counts_every_workflow,
    "StaleCountCacheStore": live_stale_counts,
    "CountsWithoutActiveRunsStore": live_counts_active,
    "CountsSkippedAsPendingStore": live_counts_skipped,
    "ClaimCheckThenActStore": live_claim_race,
    "ClaimNeverExpiresStore": live_claim_never_expires,
    "ClaimedInvocationsNeverExpireStore": live_claimed_not_expired,
    "ClaimBlocksTimeoutStore": live_claim_blocks_timeout,
    "DuePollsIgnoreTimeStore": live_due_polls,
    "AutocommitReadingStore": live_snapshot,
    "ReadingBypassedByListEventsStore": live_snapshot,
    "PausedProducersDueStore": live_due_producers,
    "DueProducersStrictlyBeforeStore": live_due_producers,
    "DueProducersCappedStore": live_due_producers,
    "DroppedProducersDueStore": live_due_producers,
    "WakeTimesIgnoredStore": live_wake_at,
    "DeployIfChangedUnlockedStore": live_deploy_race,
    "PendingNewestFirstStore": live_pending_order,
    "ActiveRunsWithPausedStore": live_active_runs,
    "RenewalNewTokenStore": live_renewal_token,
    "InsertRunUnguardedStore": live_merged_begin_unguarded,
    "EndingPausedRunBlockedStore": live_ending_paused_run,
    "DeliveriesFilteredAfterLimitStore": live_deliveries_blocked,
    "UnmeasuredPeekStore": live_unmeasured_peek,
}


def _open(cls: Any, tmp_path: Path, clock: ManualClock) -> Any:
    if issubclass(cls, SqlStore):
        return cls(f"sqlite:///{tmp_path}/keep.db", clock=clock)
    return cls(clock=clock)


def _reference(cls: Any) -> Any:
    return SqlStore if issubclass(cls, SqlStore) else MemoryStore


def test_every_case_has_a_live_demonstration() -> None:
    assert set(LIVE) == set(CASES)
    assert len(CASES) >= 29
    assert all(CASES.values()), "every broken store names the clauses that catch it"


@pytest.mark.parametrize("name", sorted(CASES))
def test_the_bug_is_live(name: str, tmp_path: Path) -> None:
    cls = getattr(capability_bugs, name)
    clock, reference_clock = ManualClock(), ManualClock()
    (tmp_path / "broken").mkdir()
    (tmp_path / "reference").mkdir()
    broken = _open(cls, tmp_path / "broken", clock)
    reference = _open(_reference(cls), tmp_path / "reference", reference_clock)
    try:
        assert LIVE[name](broken, clock), f"{name}: the bug did not show"
        assert not LIVE[name](reference, reference_clock), f"{name}: the reference shows it too"
    finally:
        broken.close()
        reference.close()


def test_the_suite_catches_every_broken_store(pytester: pytest.Pytester) -> None:
    """One run of the suite's clauses: each broken store's own selection, all at once."""
    module = SUITE_HEADER
    for name in sorted(CASES):
        sql = issubclass(getattr(capability_bugs, name), SqlStore)
        module += SUITE_CLASS.format(name=name, sql=sql)
    pytester.makepyfile(test_broken=module)
    selection = " or ".join(
        f"(TestBroken_{name} and ({' or '.join(sorted(tests))}))" for name, tests in CASES.items()
    )
    result = pytester.inline_run("-k", selection, "-m", "not slow", "-p", "no:cacheprovider")
    failed: dict[str, set[str]] = {}
    for report in result.getfailures():
        _, cls, test = report.nodeid.split("::")[:3]
        failed.setdefault(cls.removeprefix("TestBroken_"), set()).add(test.split("[")[0])
    missed = {name: sorted(tests - failed.get(name, set())) for name, tests in CASES.items()}
    assert not {name: m for name, m in missed.items() if m}, "clauses that did not fail"
    assert set(failed) == set(CASES), f"no clause failed for {sorted(set(CASES) - set(failed))}"
