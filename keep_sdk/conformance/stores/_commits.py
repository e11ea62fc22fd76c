"""Commits: consumer and producer runs commit state, events and publishes together.

The fault-injection tests fail each commit point at every fault point it
passes and require that nothing it wrote before the fault remains.
"""

from __future__ import annotations

import datetime as dt
import functools
import time
import uuid

import pytest

from keep_sdk.conformance.stores._base import StoreTestBase
from keep_sdk.conformance.stores._support import (
    CONSUMER,
    PRODUCER,
    STANDARD_HANDLERS,
    FaultInjector,
    ManualClock,
)
from keep_sdk.errors import MutationConflict, PhaseConflict, RunNotActive
from keep_sdk.model import (
    EventStatus,
    FailureKind,
    HandlerKind,
    MutationApplied,
    MutationNone,
    MutationSkipped,
    PrepareResult,
    Reservation,
    RunPhase,
    RunStatus,
)
from keep_sdk.stores import UNCHANGED, Publication, PublishOutcome, Resolution, Store

__all__ = ["CommitTests"]


def _out(*message_ids: str) -> list[Publication]:
    return [Publication(topic="out", message_id=m, title=f"Row for {m}") for m in message_ids]


class CommitTests(StoreTestBase):
    """commit_consumer_run, commit_producer_run and the atomicity of every commit point."""

    def test_a_consumer_commit_consumes_saves_state_and_publishes(self, store: Store) -> None:
        wf = self.deploy(store)
        self.publish(store, wf, "a", "b", "c")
        run = self.prepared(store, wf, "a", "b")
        store.advance_phase(run.id, RunPhase.EMITTING)
        commit = store.commit_consumer_run(
            run.id, state={"count": 2}, publishes=_out("a", "b"), logs=["done"]
        )
        assert (commit.run.status, commit.run.phase) == (RunStatus.COMMITTED, RunPhase.COMMITTED)
        assert commit.run.mutation_result == MutationNone()
        assert (commit.run.output_state, commit.run.logs) == ({"count": 2}, ["done"])
        assert [p.outcome for p in commit.published] == [PublishOutcome.CREATED] * 2
        assert all(p.event.created_by == run.id for p in commit.published)
        status = {(e.topic, e.message_id): e.status for e in store.list_events(wf)}
        assert status == {
            ("in", "a"): EventStatus.CONSUMED,
            ("in", "b"): EventStatus.CONSUMED,
            ("in", "c"): EventStatus.PENDING,
            ("out", "a"): EventStatus.PENDING,
            ("out", "b"): EventStatus.PENDING,
        }
        handler = store.get_handler(wf, CONSUMER)
        assert (handler.has_state, handler.state) == (True, {"count": 2})
        assert store.get_run(run.id) == commit.run
        assert not any(r.workflow == wf for r in store.active_runs())

    def test_an_applied_mutation_is_committed_with_its_result(self, store: Store) -> None:
        wf = self.deploy(store)
        run = self.mutating(store, wf, "a")
        store.record_mutation_applied(self.intent(store, run).id, {"row": 3})
        with pytest.raises(MutationConflict):
            store.commit_consumer_run(run.id, mutation_result=MutationNone())
        commit = store.commit_consumer_run(run.id, mutation_result=MutationApplied(result=None))
        assert commit.run.mutation_result == MutationApplied(result={"row": 3})

    def test_a_skipped_mutation_skips_the_reserved_events(self, store: Store) -> None:
        wf = self.deploy(store)
        run = self.mutating(store, wf, "a", "b")
        entry = self.intent(store, run)
        store.record_mutation_indeterminate(entry.id, error="timeout")
        store.resolve_mutation(entry.id, Resolution.SKIP, actor="alice")
        commit = store.commit_consumer_run(run.id, state={"skipped": True})
        assert commit.run.mutation_result == MutationSkipped()
        assert {e.status for e in store.list_events(wf)} == {EventStatus.SKIPPED}

    def test_commit_is_refused_while_the_mutation_is_unsettled(self, store: Store) -> None:
        wf = self.deploy(store)
        run = self.mutating(store, wf, "a")
        with pytest.raises(PhaseConflict):
            store.commit_consumer_run(run.id)
        entry = self.intent(store, run)
        with pytest.raises((MutationConflict, PhaseConflict)):
            store.commit_consumer_run(run.id)
        store.record_needs_reconcile(entry.id, next_reconcile_at=dt.datetime.now(dt.UTC))
        with pytest.raises((MutationConflict, PhaseConflict)):
            store.commit_consumer_run(run.id)
        assert store.list_events(wf)[0].status is EventStatus.RESERVED
        assert store.get_run(run.id).status is RunStatus.ACTIVE

    def test_a_run_cannot_commit_twice_or_while_paused(self, store: Store) -> None:
        wf = self.deploy(store)
        run = self.prepared(store, wf, "a")
        store.set_run_status(run.id, RunStatus.PAUSED_TRANSIENT, failure=FailureKind.TRANSIENT)
        with pytest.raises(RunNotActive):
            store.commit_consumer_run(run.id)
        store.set_run_status(run.id, RunStatus.ACTIVE)
        store.commit_consumer_run(run.id)
        with pytest.raises(RunNotActive):
            store.commit_consumer_run(run.id)
        with pytest.raises(PhaseConflict):
            store.commit_producer_run(self.begin_consumer(store, wf).id, next_run_at=None)

    def test_unchanged_state_keeps_the_previous_state(self, store: Store) -> None:
        wf = self.deploy(store)
        first = self.prepared(store, wf)
        store.commit_consumer_run(first.id, state={"v": 1})
        second = self.prepared(store, wf)
        store.commit_consumer_run(second.id, state=UNCHANGED)
        assert store.get_handler(wf, CONSUMER).state == {"v": 1}
        third = self.prepared(store, wf)
        store.commit_consumer_run(third.id, state=None)
        handler = store.get_handler(wf, CONSUMER)
        assert (handler.has_state, handler.state) == (True, None)

    def test_replayed_publishes_are_duplicates(self, store: Store) -> None:
        wf = self.deploy(store)
        first = self.prepared(store, wf, "a")
        store.commit_consumer_run(first.id, publishes=_out("row-a"))
        forward = store.begin_run(wf, "forward", HandlerKind.CONSUMER)
        store.save_prepare_result(
            forward.id, PrepareResult(reservations=[Reservation(topic="out", ids=["row-a"])])
        )
        store.commit_consumer_run(forward.id)
        replay = self.prepared(store, wf)
        commit = store.commit_consumer_run(replay.id, publishes=_out("row-a", "row-b"))
        assert [p.outcome for p in commit.published] == [
            PublishOutcome.DUPLICATE,
            PublishOutcome.CREATED,
        ]
        assert [e.message_id for e in store.pending_events(wf, "out", limit=10)] == ["row-b"]

    def test_a_producer_commit_saves_state_publishes_and_next_run(
        self, store: Store, clock: ManualClock
    ) -> None:
        wf = self.deploy(store)
        run = self.begin_producer(store, wf)
        next_run_at = clock.advance(0) + dt.timedelta(minutes=5)
        commit = store.commit_producer_run(
            run.id,
            state={"cursor": "c2"},
            publishes=[Publication(topic="in", message_id="e1", title="Email 1", payload=1)],
            next_run_at=next_run_at,
        )
        assert commit.run.status is RunStatus.COMMITTED
        assert [p.outcome for p in commit.published] == [PublishOutcome.CREATED]
        handler = store.get_handler(wf, PRODUCER)
        assert (handler.state, handler.next_run_at) == ({"cursor": "c2"}, next_run_at)
        assert [e.message_id for e in store.pending_events(wf, "in", limit=5)] == ["e1"]

    def test_a_failed_producer_leaves_state_and_topics_untouched(self, store: Store) -> None:
        wf = self.deploy(store)
        first = self.begin_producer(store, wf)
        store.commit_producer_run(first.id, state={"cursor": 1}, next_run_at=None)
        run = self.begin_producer(store, wf)
        store.set_run_status(run.id, RunStatus.FAILED_INTERNAL, error="boom")
        assert store.get_handler(wf, PRODUCER).state == {"cursor": 1}
        assert store.list_events(wf) == []
        with pytest.raises(RunNotActive):
            store.commit_producer_run(run.id, state={"cursor": 2}, next_run_at=None)
        assert store.get_handler(wf, PRODUCER).state == {"cursor": 1}

    # Atomicity under injected faults

    def test_a_consumer_commit_is_all_or_nothing(self, store: Store, faults: FaultInjector) -> None:
        wf = self.deploy(store)
        self.publish(store, wf, "row-x", topic="out")
        run = self.prepared(store, wf, "a", "b")
        store.advance_phase(run.id, RunPhase.EMITTING)
        self.assert_all_or_nothing(
            store,
            faults,
            [wf],
            lambda: store.commit_consumer_run(
                run.id, state={"n": 2}, publishes=_out("row-x", "row-y")
            ),
            min_points=2,
        )
        assert store.get_run(run.id).status is RunStatus.COMMITTED
        assert store.get_handler(wf, CONSUMER).state == {"n": 2}

    def test_a_producer_commit_is_all_or_nothing(
        self, store: Store, faults: FaultInjector, clock: ManualClock
    ) -> None:
        wf = self.deploy(store)
        self.publish(store, wf, "e1")
        run = self.begin_producer(store, wf)
        self.assert_all_or_nothing(
            store,
            faults,
            [wf],
            lambda: store.commit_producer_run(
                run.id,
                state={"cursor": 9},
                publishes=[
                    Publication(topic="in", message_id="e1", title="Email 1 again"),
                    Publication(topic="in", message_id="e2", title="Email 2"),
                ],
                next_run_at=clock() + dt.timedelta(minutes=5),
            ),
            min_points=2,
        )
        assert store.get_handler(wf, PRODUCER).state == {"cursor": 9}

    def test_saving_a_prepare_result_is_all_or_nothing(
        self, store: Store, faults: FaultInjector, clock: ManualClock
    ) -> None:
        wf = self.deploy(store)
        self.publish(store, wf, "a", "b")
        run = self.begin_consumer(store, wf)
        result = PrepareResult(
            reservations=[Reservation(topic="in", ids=["a", "b"])],
            wake_at=clock() + dt.timedelta(minutes=1),
        )
        self.assert_all_or_nothing(
            store, faults, [wf], lambda: store.save_prepare_result(run.id, result), min_points=2
        )
        assert store.get_run(run.id).phase is RunPhase.PREPARED

    def test_releasing_reservations_is_all_or_nothing(
        self, store: Store, faults: FaultInjector
    ) -> None:
        wf = self.deploy(store)
        run = self.prepared(store, wf, "a", "b")
        self.assert_all_or_nothing(
            store,
            faults,
            [wf],
            lambda: store.set_run_status(
                run.id, RunStatus.CRASHED, error="died", release_reservations=True
            ),
        )
        assert {e.status for e in store.list_events(wf)} == {EventStatus.PENDING}

    def test_a_retry_taking_over_reservations_is_all_or_nothing(
        self, store: Store, faults: FaultInjector
    ) -> None:
        wf = self.deploy(store)
        run = self.prepared(store, wf, "a", "b")
        store.set_run_status(run.id, RunStatus.CRASHED)
        self.assert_all_or_nothing(
            store,
            faults,
            [wf],
            lambda: store.begin_run(
                wf, CONSUMER, HandlerKind.CONSUMER, retry_of=run.id, phase=RunPhase.EMITTING
            ),
        )

    def test_recording_an_applied_mutation_is_all_or_nothing(
        self, store: Store, faults: FaultInjector
    ) -> None:
        wf = self.deploy(store)
        run = self.mutating(store, wf, "a")
        entry = self.intent(store, run)
        self.assert_all_or_nothing(
            store, faults, [wf], lambda: store.record_mutation_applied(entry.id, {"row": 1})
        )
        assert store.get_run(run.id).phase is RunPhase.MUTATED

    def test_a_resolution_is_all_or_nothing(self, store: Store, faults: FaultInjector) -> None:
        wf = self.deploy(store)
        run = self.mutating(store, wf, "a")
        entry = self.intent(store, run)
        store.record_mutation_indeterminate(entry.id, error="timeout")
        self.assert_all_or_nothing(
            store,
            faults,
            [wf],
            lambda: store.resolve_mutation(entry.id, Resolution.HAPPENED, actor="alice"),
        )

    def test_person_actions_are_all_or_nothing(self, store: Store, faults: FaultInjector) -> None:
        wf = self.deploy(store)
        self.publish(store, wf, "a")
        event = store.list_events(wf)[0]
        self.assert_all_or_nothing(
            store, faults, [wf], lambda: store.skip_event(event.id, actor="alice")
        )
        self.assert_all_or_nothing(
            store, faults, [wf], lambda: store.pause_workflow(wf, actor="alice")
        )
        self.assert_all_or_nothing(
            store, faults, [wf], lambda: store.grant_permission(wf, "sheets.write", actor="bob")
        )

    def test_deploy_if_changed_deploys_only_a_new_source(self, store: Store) -> None:
        wf = f"wf-{uuid.uuid4().hex[:12]}"
        handlers = list(STANDARD_HANDLERS)
        assert store.deploy_if_changed(wf, "v1", {"v": 1}, handlers=handlers) == (1, True)
        assert store.deploy_if_changed(wf, "v1", {"v": 1}, handlers=handlers) == (1, False)
        assert store.deploy_if_changed(wf, "v2", {"v": 2}, handlers=handlers) == (2, True)
        assert store.deploy_if_changed(wf, "v1", {"v": 1}, handlers=handlers) == (3, True)
        assert store.get_workflow(wf).version == 3
        assert store.get_workflow_version(wf, 2).source == "v2"

    @pytest.mark.parametrize("existing", [False, True], ids=["first", "again"])
    def test_racing_threads_deploy_the_same_source_once(self, store: Store, existing: bool) -> None:
        wf = f"wf-{uuid.uuid4().hex[:12]}"
        if existing:
            store.deploy(wf, "old", {}, handlers=list(STANDARD_HANDLERS))
        outcomes = self.at_once(
            [lambda: store.deploy_if_changed(wf, "same", {}, handlers=list(STANDARD_HANDLERS))] * 4
        )
        version = 2 if existing else 1
        assert sorted(outcomes) == [(version, False)] * 3 + [(version, True)]
        assert store.get_workflow(wf).version == version

    @pytest.mark.parametrize("existing", [False, True], ids=["first", "again"])
    def test_racing_threads_deploying_different_sources_each_get_their_own_version(
        self, store: Store, existing: bool
    ) -> None:
        """Concurrent deploys of different sources all succeed, each with its own version
        number, and every version holds the source of the deploy that got that number."""
        wf = f"wf-{uuid.uuid4().hex[:12]}"
        if existing:
            store.deploy(wf, "old", {}, handlers=list(STANDARD_HANDLERS))
        sources = [f"source {i}" for i in range(4)]
        versions = self.at_once(
            [
                functools.partial(store.deploy, wf, source, {}, handlers=list(STANDARD_HANDLERS))
                for source in sources
            ]
        )
        first = 2 if existing else 1
        assert sorted(versions) == list(range(first, first + 4))
        for source, version in zip(sources, versions, strict=True):
            assert store.get_workflow_version(wf, version).source == source
        assert store.get_workflow(wf).version == first + 3

    @pytest.mark.parametrize("existing", [False, True], ids=["first", "again"])
    def test_racing_processes_deploy_the_same_source_once(
        self, store: Store, store_url: str | None, existing: bool
    ) -> None:
        url = self.require_processes(store_url)
        wf = f"wf-{uuid.uuid4().hex[:12]}"
        if existing:
            store.deploy(wf, "old", {}, handlers=list(STANDARD_HANDLERS))
        start_at = str(time.time() + 1.5)
        children = [self.spawn(url, "deploy-if-changed", wf, start_at) for _ in range(3)]
        deployed = sorted(r["deployed"] for r in self.results(children))
        assert deployed == [False, False, True]
        assert store.get_workflow(wf).version == (2 if existing else 1)

    def test_deploying_a_version_is_all_or_nothing(
        self, store: Store, faults: FaultInjector
    ) -> None:
        wf = self.deploy(store)
        self.assert_all_or_nothing(
            store,
            faults,
            [wf],
            lambda: store.deploy(
                wf, "v2", {"v": 2}, handlers=store.get_workflow_version(wf).handlers
            ),
            min_points=2,
        )
        assert store.get_workflow(wf).version == 2
