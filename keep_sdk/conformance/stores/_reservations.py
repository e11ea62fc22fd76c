"""Reservations: all or nothing, never of an event that is not pending, exclusive under races."""

from __future__ import annotations

import datetime as dt
import threading
from collections import Counter
from collections.abc import Callable
from functools import partial
from typing import Any

import pytest

from keep_sdk.conformance.stores._base import StoreTestBase
from keep_sdk.conformance.stores._support import CONSUMER, ManualClock, snapshot
from keep_sdk.conformance.stores._workers import consume_all
from keep_sdk.errors import EventNotPending, NotFound
from keep_sdk.model import (
    EventStatus,
    FailureKind,
    PrepareResult,
    Reservation,
    RunPhase,
    RunStatus,
)
from keep_sdk.stores import Store

__all__ = ["ReservationTests"]


class ReservationTests(StoreTestBase):
    """save_prepare_result and the exclusivity of reservations."""

    def test_save_prepare_result_reserves_pins_and_records_wake_at(
        self, store: Store, clock: ManualClock
    ) -> None:
        wf = self.deploy(store)
        self.publish(store, wf, "a", "b")
        self.publish(store, wf, "x", topic="other")
        run = self.begin_consumer(store, wf)
        wake_at = clock.advance(0).replace(microsecond=0) + dt.timedelta(minutes=5)
        result = PrepareResult(
            reservations=[
                Reservation(topic="in", ids=["b"]),
                Reservation(topic="other", ids=["x"]),
            ],
            data={"subject": "hello"},
            wake_at=wake_at,
        )
        saved = store.save_prepare_result(run.id, result)
        assert (saved.phase, saved.prepare_result) == (RunPhase.PREPARED, result)
        assert store.get_run(run.id).prepare_result == result
        status = {e.message_id: (e.status, e.reserved_by) for e in store.list_events(wf)}
        assert status == {
            "a": (EventStatus.PENDING, None),
            "b": (EventStatus.RESERVED, run.id),
            "x": (EventStatus.RESERVED, run.id),
        }
        assert store.get_handler(wf, CONSUMER).wake_at == wake_at
        assert [e.message_id for e in store.pending_events(wf, "in", limit=10)] == ["a"]

    def test_reserving_an_event_that_is_not_pending_reserves_nothing(self, store: Store) -> None:
        wf = self.deploy(store)
        holder = self.prepared(store, wf, "held")
        store.set_run_status(holder.id, RunStatus.PAUSED_APPROVAL, failure=FailureKind.PERMISSION)
        self.publish(store, wf, "free")
        run = self.begin_consumer(store, wf)
        before = snapshot(store, [wf])
        with pytest.raises(EventNotPending, match="held"):
            store.save_prepare_result(
                run.id, PrepareResult(reservations=[Reservation(topic="in", ids=["free", "held"])])
            )
        assert snapshot(store, [wf]) == before
        assert store.get_run(run.id).phase is RunPhase.PREPARING
        assert store.events_by_ids(wf, "in", ["free"])[0].status is EventStatus.PENDING
        assert store.events_by_ids(wf, "in", ["held"])[0].reserved_by == holder.id

    def test_reserving_consumed_or_skipped_events_is_refused(self, store: Store) -> None:
        wf = self.deploy(store)
        done = self.prepared(store, wf, "done")
        store.commit_consumer_run(done.id)
        self.publish(store, wf, "gone")
        store.skip_event(store.events_by_ids(wf, "in", ["gone"])[0].id, actor="alice")
        for mid in ("done", "gone"):
            run = self.begin_consumer(store, wf)
            with pytest.raises(EventNotPending, match=mid):
                store.save_prepare_result(
                    run.id, PrepareResult(reservations=[Reservation(topic="in", ids=[mid])])
                )
            store.set_run_status(run.id, RunStatus.FAILED_LOGIC, failure=FailureKind.LOGIC)

    def test_reserving_unknown_ids_names_them_and_reserves_nothing(self, store: Store) -> None:
        wf = self.deploy(store)
        other = self.deploy(store)
        self.publish(store, wf, "a")
        self.publish(store, other, "foreign")
        run = self.begin_consumer(store, wf)
        with pytest.raises(NotFound, match="foreign"):
            store.save_prepare_result(
                run.id,
                PrepareResult(reservations=[Reservation(topic="in", ids=["a", "foreign"])]),
            )
        assert store.list_events(wf)[0].status is EventStatus.PENDING
        assert store.list_events(other)[0].status is EventStatus.PENDING

    @pytest.mark.parametrize("count", [1, 33, 120])
    def test_any_number_of_events_is_looked_up_and_reserved_whole(
        self, store: Store, count: int
    ) -> None:
        """However a store batches a list of ids (bound parameters, IN lists, pages), a
        lookup finds every listed event in the order asked, and a reservation takes every
        one of them and nothing else."""
        wf = self.deploy(store)
        wanted = [f"m{i:03d}" for i in range(count)]
        self.publish(store, wf, *wanted, "left")
        asked = [*reversed(wanted), "never-published"]
        assert [e.message_id for e in store.events_by_ids(wf, "in", asked)] == asked[:-1]
        run = self.prepared(store, wf, *wanted)
        status = {e.message_id: (e.status, e.reserved_by) for e in store.list_events(wf)}
        assert status == {
            **dict.fromkeys(wanted, (EventStatus.RESERVED, run.id)),
            "left": (EventStatus.PENDING, None),
        }

    def test_a_paused_run_keeps_its_reservations(self, store: Store) -> None:
        wf = self.deploy(store)
        run = self.prepared(store, wf, "a")
        store.set_run_status(run.id, RunStatus.PAUSED_TRANSIENT, failure=FailureKind.TRANSIENT)
        event = store.list_events(wf)[0]
        assert (event.status, event.reserved_by) == (EventStatus.RESERVED, run.id)
        store.set_run_status(run.id, RunStatus.ACTIVE)
        store.commit_consumer_run(run.id)
        assert store.list_events(wf)[0].status is EventStatus.CONSUMED

    def _check_consumed_once(
        self, store: Store, wf: str, reports: list[dict[str, Any]], total: int
    ) -> None:
        consumed = [mid for report in reports for mid in report["consumed"]]
        assert sum(report["refused"] for report in reports) == 0
        duplicates = [mid for mid, n in Counter(consumed).items() if n > 1]
        assert duplicates == [], f"events consumed by more than one run: {duplicates}"
        assert len(consumed) == total
        assert {e.status for e in store.list_events(wf)} == {EventStatus.CONSUMED}
        reserved_by = [
            mid
            for run in store.list_runs(workflow=wf)
            if run.prepare_result is not None
            for mid in run.prepare_result.reserved_ids.get("in", [])
        ]
        assert sorted(reserved_by) == sorted(consumed)

    def test_racing_threads_consume_every_event_exactly_once(self, store: Store) -> None:
        if not self.supports_threads:
            pytest.skip(f"{type(self).__name__} does not declare supports_threads")
        wf = self.deploy(store)
        total = 24
        self.publish(store, wf, *(f"m{i:02d}" for i in range(total)))
        reports: list[dict[str, Any]] = []
        errors: list[BaseException] = []

        def work() -> None:
            try:
                reports.append(consume_all(store, wf, CONSUMER))
            except BaseException as exc:
                errors.append(exc)

        threads = [threading.Thread(target=work) for _ in range(self.process_workers)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(120)
        assert errors == []
        self._check_consumed_once(store, wf, reports, total)

    def test_racing_processes_consume_every_event_exactly_once(
        self, store: Store, store_url: str | None
    ) -> None:
        url = self.require_processes(store_url)
        wf = self.deploy(store)
        total = 24
        self.publish(store, wf, *(f"m{i:02d}" for i in range(total)))
        children = [self.spawn(url, "consume", wf, CONSUMER) for _ in range(self.process_workers)]
        self._check_consumed_once(store, wf, self.results(children), total)

    @staticmethod
    def _contend(
        barrier: threading.Barrier, won: dict[str, bool], name: str, action: Callable[[], object]
    ) -> None:
        barrier.wait()
        try:
            action()
            won[name] = True
        except EventNotPending:
            won[name] = False

    def test_a_reservation_racing_a_skip_lets_exactly_one_win(self, store: Store) -> None:
        if not self.supports_threads:
            pytest.skip(f"{type(self).__name__} does not declare supports_threads")
        wf = self.deploy(store)
        for i in range(8):
            mid = f"race-{i}"
            self.publish(store, wf, mid)
            event = store.events_by_ids(wf, "in", [mid])[0]
            run = self.begin_consumer(store, wf)
            result = PrepareResult(reservations=[Reservation(topic="in", ids=[mid])])
            barrier = threading.Barrier(2)
            won: dict[str, bool] = {}
            threads = [
                threading.Thread(
                    target=self._contend,
                    args=(
                        barrier,
                        won,
                        "reserve",
                        partial(store.save_prepare_result, run.id, result),
                    ),
                ),
                threading.Thread(
                    target=self._contend,
                    args=(barrier, won, "skip", partial(store.skip_event, event.id, actor="alice")),
                ),
            ]
            for thread in threads:
                thread.start()
            for thread in threads:
                thread.join(60)
            assert sorted(won.values()) == [False, True], won
            final = store.get_event(event.id)
            if won["reserve"]:
                assert (final.status, final.reserved_by) == (EventStatus.RESERVED, run.id)
                store.commit_consumer_run(run.id)
            else:
                assert final.status is EventStatus.SKIPPED
                assert store.get_run(run.id).phase is RunPhase.PREPARING
                store.set_run_status(run.id, RunStatus.FAILED_LOGIC, failure=FailureKind.LOGIC)
