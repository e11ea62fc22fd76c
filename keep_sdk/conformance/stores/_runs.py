"""Runs: one active run per workflow, forward-only phases, status changes, retries."""

from __future__ import annotations

import datetime as dt
import threading
import time

import pytest

from keep_sdk.conformance.stores._base import StoreTestBase
from keep_sdk.conformance.stores._support import CONSUMER, ManualClock, snapshot
from keep_sdk.conformance.stores._workers import try_begin
from keep_sdk.errors import (
    ActiveRunExists,
    MutationConflict,
    NotFound,
    PhaseConflict,
    RunNotActive,
    WorkflowPaused,
)
from keep_sdk.model import (
    EventStatus,
    FailureKind,
    HandlerKind,
    MutationApplied,
    PrepareResult,
    RunPhase,
    RunStatus,
)
from keep_sdk.stores import Store

__all__ = ["RunTests"]


class RunTests(StoreTestBase):
    """begin_run, advance_phase, set_run_status and retries."""

    def test_begin_run_creates_an_active_run_at_preparing(self, store: Store) -> None:
        wf = self.deploy(store)
        run = self.begin_consumer(store, wf)
        assert (run.workflow, run.handler, run.kind) == (wf, CONSUMER, HandlerKind.CONSUMER)
        assert (run.phase, run.status, run.workflow_version) == (
            RunPhase.PREPARING,
            RunStatus.ACTIVE,
            1,
        )
        assert run.input_state == {"n": 1}
        assert store.get_run(run.id) == run
        assert [r.id for r in store.active_runs() if r.workflow == wf] == [run.id]

    def test_a_second_active_run_is_refused_and_changes_nothing(self, store: Store) -> None:
        wf = self.deploy(store)
        first = self.begin_consumer(store, wf)
        before = snapshot(store, [wf])
        with pytest.raises(ActiveRunExists):
            self.begin_producer(store, wf)
        assert snapshot(store, [wf]) == before
        other = self.deploy(store)
        assert self.begin_consumer(store, other).status is RunStatus.ACTIVE
        store.set_run_status(first.id, RunStatus.PAUSED_TRANSIENT, failure=FailureKind.TRANSIENT)
        assert self.begin_producer(store, wf).status is RunStatus.ACTIVE

    def test_resuming_a_paused_run_is_refused_while_another_is_active(self, store: Store) -> None:
        wf = self.deploy(store)
        paused = self.begin_consumer(store, wf)
        store.set_run_status(paused.id, RunStatus.PAUSED_APPROVAL, failure=FailureKind.PERMISSION)
        other = self.begin_producer(store, wf)
        with pytest.raises(ActiveRunExists):
            store.set_run_status(paused.id, RunStatus.ACTIVE)
        assert store.get_run(paused.id).status is RunStatus.PAUSED_APPROVAL
        store.set_run_status(
            other.id, RunStatus.FAILED_LOGIC, error="bad", failure=FailureKind.LOGIC
        )
        resumed = store.set_run_status(paused.id, RunStatus.ACTIVE)
        assert (resumed.status, resumed.phase) == (RunStatus.ACTIVE, RunPhase.PREPARING)

    @pytest.mark.parametrize(
        "end", [RunStatus.FAILED_LOGIC, RunStatus.CRASHED, RunStatus.PAUSED_APPROVAL]
    )
    def test_a_paused_run_changes_status_while_another_run_is_active(
        self, store: Store, end: RunStatus
    ) -> None:
        """Only a run becoming active competes for the workflow: ending or re-pausing a
        paused run while another is active is allowed and leaves the other active."""
        wf = self.deploy(store)
        paused = self.begin_consumer(store, wf)
        store.set_run_status(paused.id, RunStatus.PAUSED_TRANSIENT, failure=FailureKind.TRANSIENT)
        active = self.begin_producer(store, wf)
        changed = store.set_run_status(paused.id, end, error="stopped by alice")
        assert changed.status is end
        assert store.get_run(paused.id) == changed
        assert [r.id for r in store.active_runs() if r.workflow == wf] == [active.id]

    def test_runs_do_not_begin_in_a_paused_workflow(self, store: Store) -> None:
        wf = self.deploy(store)
        paused = store.pause_workflow(wf, actor="alice", reason="holiday")
        assert paused.paused
        with pytest.raises(WorkflowPaused):
            self.begin_consumer(store, wf)
        assert store.list_runs(workflow=wf) == []
        assert not store.resume_workflow(wf, actor="alice").paused
        self.begin_consumer(store, wf)
        assert [a.action for a in store.audit_log(workflow=wf)] == ["pause", "resume"]

    def test_a_run_needs_a_declared_handler_of_its_kind(self, store: Store) -> None:
        wf = self.deploy(store)
        with pytest.raises(NotFound):
            store.begin_run(wf, "nope", HandlerKind.CONSUMER)
        with pytest.raises(PhaseConflict):
            store.begin_run(wf, CONSUMER, HandlerKind.PRODUCER)
        with pytest.raises(NotFound):
            store.begin_run("no-such-workflow", CONSUMER, HandlerKind.CONSUMER)
        assert store.list_runs(workflow=wf) == []

    def test_a_new_run_starts_at_preparing(self, store: Store) -> None:
        wf = self.deploy(store)
        with pytest.raises(PhaseConflict):
            store.begin_run(wf, CONSUMER, HandlerKind.CONSUMER, phase=RunPhase.EMITTING)

    def test_phases_only_move_forward(self, store: Store) -> None:
        wf = self.deploy(store)
        run = self.begin_consumer(store, wf)
        with pytest.raises(PhaseConflict):
            store.advance_phase(run.id, RunPhase.MUTATING)
        run = store.save_prepare_result(run.id, PrepareResult())
        with pytest.raises(PhaseConflict):
            store.save_prepare_result(run.id, PrepareResult())
        for target in (RunPhase.PREPARED, RunPhase.MUTATED, RunPhase.COMMITTED):
            with pytest.raises(PhaseConflict):
                store.advance_phase(run.id, target)
        assert store.advance_phase(run.id, RunPhase.EMITTING).phase is RunPhase.EMITTING
        for target in (RunPhase.MUTATING, RunPhase.EMITTING):
            with pytest.raises(PhaseConflict):
                store.advance_phase(run.id, target)
        assert store.get_run(run.id).phase is RunPhase.EMITTING

    def test_failures_change_status_never_phase(self, store: Store, clock: ManualClock) -> None:
        wf = self.deploy(store)
        run = self.mutating(store, wf, "m1")
        resume_at = clock.advance(0) + dt.timedelta(seconds=30)
        paused = store.set_run_status(
            run.id,
            RunStatus.PAUSED_TRANSIENT,
            error="rate limited",
            failure=FailureKind.TRANSIENT,
            resume_at=resume_at,
            logs=["429 from sheets"],
        )
        assert (paused.phase, paused.status, paused.failure) == (
            RunPhase.MUTATING,
            RunStatus.PAUSED_TRANSIENT,
            FailureKind.TRANSIENT,
        )
        assert (paused.error, paused.resume_at, paused.logs) == (
            "rate limited",
            resume_at,
            ["429 from sheets"],
        )
        with pytest.raises(RunNotActive):
            store.advance_phase(run.id, RunPhase.EMITTING)
        with pytest.raises(RunNotActive):
            self.intent(store, run)
        assert store.get_run(run.id) == paused

    def test_finished_runs_never_change(self, store: Store) -> None:
        wf = self.deploy(store)
        run = self.begin_consumer(store, wf)
        store.set_run_status(run.id, RunStatus.FAILED_LOGIC, error="x", failure=FailureKind.LOGIC)
        for status in (RunStatus.ACTIVE, RunStatus.PAUSED_TRANSIENT, RunStatus.CRASHED):
            with pytest.raises(RunNotActive):
                store.set_run_status(run.id, status)
        with pytest.raises(PhaseConflict):
            store.set_run_status(self.begin_consumer(store, wf).id, RunStatus.COMMITTED)

    def test_release_returns_reservations_to_pending_with_one_more_attempt(
        self, store: Store
    ) -> None:
        wf = self.deploy(store)
        self.publish(store, wf, "a", "b", "c")
        run = self.prepared(store, wf, "a", "c")
        store.set_run_status(
            run.id, RunStatus.CRASHED, error="worker died", release_reservations=True
        )
        events = {e.message_id: e for e in store.list_events(wf)}
        assert {m: (e.status, e.attempt) for m, e in events.items()} == {
            "a": (EventStatus.PENDING, 1),
            "b": (EventStatus.PENDING, 0),
            "c": (EventStatus.PENDING, 1),
        }
        assert all(e.reserved_by is None for e in events.values())
        assert [e.message_id for e in store.pending_events(wf, "in", limit=5)] == ["a", "b", "c"]

    def test_release_is_refused_once_the_mutation_may_have_happened(self, store: Store) -> None:
        wf = self.deploy(store)
        run = self.mutating(store, wf, "m1")
        entry = self.intent(store, run)
        with pytest.raises(MutationConflict):
            store.set_run_status(run.id, RunStatus.CRASHED, release_reservations=True)
        store.record_mutation_applied(entry.id, {"row": 1})
        with pytest.raises(MutationConflict):
            store.set_run_status(run.id, RunStatus.PAUSED_TRANSIENT, release_reservations=True)
        assert store.get_run(run.id).status is RunStatus.ACTIVE
        assert store.list_events(wf)[0].status is EventStatus.RESERVED

    def test_a_retry_takes_over_the_reservations_and_the_known_result(self, store: Store) -> None:
        wf = self.deploy(store)
        run = self.mutating(store, wf, "a", "b")
        entry = self.intent(store, run)
        store.record_mutation_applied(entry.id, {"row": 7})
        store.set_run_status(run.id, RunStatus.CRASHED, error="died in next")
        retry = store.begin_run(
            wf, CONSUMER, HandlerKind.CONSUMER, retry_of=run.id, phase=RunPhase.EMITTING
        )
        assert retry.retry_of == run.id
        assert retry.prepare_result == store.get_run(run.id).prepare_result
        assert retry.mutation_result == MutationApplied(result={"row": 7})
        assert {e.reserved_by for e in store.list_events(wf)} == {retry.id}
        committed = store.commit_consumer_run(retry.id, state={"done": 2})
        assert committed.run.mutation_result == MutationApplied(result={"row": 7})
        assert {e.status for e in store.list_events(wf)} == {EventStatus.CONSUMED}

    def test_a_retry_of_a_failed_mutation_may_mutate_again(self, store: Store) -> None:
        wf = self.deploy(store)
        run = self.mutating(store, wf, "a")
        entry = self.intent(store, run)
        store.record_mutation_failed(entry.id, error="row locked")
        store.set_run_status(run.id, RunStatus.FAILED_LOGIC, failure=FailureKind.PRECONDITION)
        with pytest.raises(MutationConflict):
            store.begin_run(
                wf, CONSUMER, HandlerKind.CONSUMER, retry_of=run.id, phase=RunPhase.EMITTING
            )
        retry = store.begin_run(
            wf, CONSUMER, HandlerKind.CONSUMER, retry_of=run.id, phase=RunPhase.MUTATING
        )
        second = self.intent(store, retry)
        assert second.run_id == retry.id
        assert store.ledger_entry_for_run(run.id) == store.get_ledger_entry(entry.id)

    def test_a_retry_at_preparing_releases_the_old_reservations(self, store: Store) -> None:
        wf = self.deploy(store)
        run = self.prepared(store, wf, "a")
        store.set_run_status(run.id, RunStatus.FAILED_LOGIC, failure=FailureKind.LOGIC)
        retry = store.begin_run(wf, CONSUMER, HandlerKind.CONSUMER, retry_of=run.id)
        assert retry.prepare_result is None
        event = store.list_events(wf)[0]
        assert (event.status, event.attempt, event.reserved_by) == (EventStatus.PENDING, 1, None)

    def test_retries_are_refused_for_active_committed_or_foreign_runs(self, store: Store) -> None:
        wf = self.deploy(store)
        run = self.prepared(store, wf)
        with pytest.raises(ActiveRunExists):
            store.begin_run(wf, CONSUMER, HandlerKind.CONSUMER, retry_of=run.id)
        store.commit_consumer_run(run.id)
        with pytest.raises(PhaseConflict):
            store.begin_run(wf, CONSUMER, HandlerKind.CONSUMER, retry_of=run.id)
        with pytest.raises(PhaseConflict):
            store.begin_run(wf, "forward", HandlerKind.CONSUMER, retry_of=run.id)
        with pytest.raises(NotFound):
            store.begin_run(wf, CONSUMER, HandlerKind.CONSUMER, retry_of="run_missing")

    def test_exactly_one_of_many_threads_begins_a_run(self, store: Store) -> None:
        if not self.supports_threads:
            pytest.skip(f"{type(self).__name__} does not declare supports_threads")
        wf = self.deploy(store)
        start_at = time.time() + 0.2
        outcomes: list[bool] = []
        threads = [
            threading.Thread(
                target=lambda: outcomes.append(try_begin(store, wf, CONSUMER, start_at))
            )
            for _ in range(max(4, self.process_workers * 2))
        ]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(60)
        assert sorted(outcomes) == [False] * (len(threads) - 1) + [True]
        assert len(store.list_runs(workflow=wf)) == 1

    def test_exactly_one_of_many_processes_begins_a_run(
        self, store: Store, store_url: str | None
    ) -> None:
        url = self.require_processes(store_url)
        wf = self.deploy(store)
        start_at = str(time.time() + 1.5)
        children = [
            self.spawn(url, "begin", wf, CONSUMER, start_at) for _ in range(self.process_workers)
        ]
        outcomes = [r["began"] for r in self.results(children)]
        assert sorted(outcomes) == [False] * (len(children) - 1) + [True]
        assert len(store.list_runs(workflow=wf)) == 1
