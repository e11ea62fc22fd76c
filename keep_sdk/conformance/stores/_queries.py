"""The queries the scheduler and CLI rely on, workflows and versions, the audit log."""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable

import pytest

from keep_sdk.conformance.stores._base import StoreTestBase
from keep_sdk.conformance.stores._support import CONSUMER, PRODUCER, ManualClock, snapshot
from keep_sdk.errors import NotFound
from keep_sdk.model import EventStatus, FailureKind, HandlerKind, PrepareResult, RunStatus
from keep_sdk.stores import HandlerSpec, Store, WakeReason

__all__ = ["QueryTests"]


class QueryTests(StoreTestBase):
    """Peek order, scheduler queries, versions, grants, the audit log, reopening."""

    def test_pending_events_come_oldest_first_up_to_the_limit(self, store: Store) -> None:
        wf = self.deploy(store)
        self.publish(store, wf, "e1", "e2", "e3", "e4")
        self.publish(store, wf, "o1", topic="other")
        run = self.prepared(store, wf, "e2")
        assert [e.message_id for e in store.pending_events(wf, "in", limit=2)] == ["e1", "e3"]
        store.set_run_status(run.id, RunStatus.CRASHED, release_reservations=True)
        assert [e.message_id for e in store.pending_events(wf, "in", limit=10)] == [
            "e1",
            "e2",
            "e3",
            "e4",
        ]
        assert [e.message_id for e in store.pending_events(wf, "other", limit=10)] == ["o1"]
        assert store.pending_events(wf, "nothing", limit=10) == []
        assert [
            e.message_id for e in store.list_events(wf, status=EventStatus.PENDING, limit=3)
        ] == ["e1", "e2", "e3"]

    def test_producers_are_due_after_deploy_and_at_their_next_run(
        self, store: Store, clock: ManualClock
    ) -> None:
        wf = self.deploy(store)

        def due() -> list[str]:
            return [h.name for h in store.due_producers() if h.workflow == wf]

        assert due() == [PRODUCER]
        run = self.begin_producer(store, wf)
        store.commit_producer_run(run.id, next_run_at=clock() + dt.timedelta(minutes=5))
        assert due() == []
        clock.advance(300)
        assert due() == [PRODUCER]
        store.set_next_run_at(wf, PRODUCER, None)
        assert due() == []
        store.set_next_run_at(wf, PRODUCER, clock())
        store.pause_workflow(wf, actor="alice")
        assert due() == []

    def test_consumers_wake_for_pending_events_or_a_due_wake_at(
        self, store: Store, clock: ManualClock
    ) -> None:
        wf = self.deploy(store)

        def wakes() -> list[tuple[str, WakeReason]]:
            return [(w.handler, w.reason) for w in store.consumers_to_wake() if w.workflow == wf]

        assert wakes() == []
        self.publish(store, wf, "x", topic="other")
        assert wakes() == [(CONSUMER, WakeReason.PENDING_EVENTS)]
        self.publish(store, wf, "y", topic="out")
        assert wakes() == [
            ("forward", WakeReason.PENDING_EVENTS),
            (CONSUMER, WakeReason.PENDING_EVENTS),
        ]
        run = self.prepared(store, wf, "x", topic="other")
        store.commit_consumer_run(run.id)
        store.set_wake_at(wf, "forward", clock() + dt.timedelta(minutes=1))
        store.skip_event(store.events_by_ids(wf, "out", ["y"])[0].id, actor="alice")
        run = self.begin_consumer(store, wf)
        store.save_prepare_result(run.id, PrepareResult(wake_at=clock() + dt.timedelta(seconds=30)))
        store.commit_consumer_run(run.id)
        assert wakes() == []
        clock.advance(30)
        assert wakes() == [(CONSUMER, WakeReason.WAKE_AT)]
        clock.advance(30)
        assert wakes() == [("forward", WakeReason.WAKE_AT), (CONSUMER, WakeReason.WAKE_AT)]
        store.pause_workflow(wf, actor="alice")
        assert wakes() == []

    def test_a_new_version_keeps_state_and_events_and_schedules_only_its_handlers(
        self, store: Store
    ) -> None:
        wf = self.deploy(store)
        run = self.prepared(store, wf)
        store.commit_consumer_run(run.id, state={"seen": 1})
        self.publish(store, wf, "a", topic="out")
        version = store.deploy(
            wf,
            "v2 source",
            {"v": 2},
            handlers=[
                HandlerSpec(name=CONSUMER, kind=HandlerKind.CONSUMER, subscribe=["in"]),
                HandlerSpec(name="new", kind=HandlerKind.PRODUCER),
            ],
        )
        assert version == 2
        assert store.get_workflow(wf).version == 2
        assert store.get_workflow_version(wf).source == "v2 source"
        assert store.get_workflow_version(wf, 1).source == "export default Keep.workflow({})"
        with pytest.raises(NotFound):
            store.get_workflow_version(wf, 3)
        assert store.get_handler(wf, CONSUMER).state == {"seen": 1}
        assert store.get_handler(wf, CONSUMER).subscribe == ["in"]
        assert [e.message_id for e in store.list_events(wf)] == ["a"]
        assert [w.handler for w in store.consumers_to_wake() if w.workflow == wf] == []
        assert [h.name for h in store.due_producers() if h.workflow == wf] == ["new"]
        with pytest.raises(NotFound):
            store.begin_run(wf, "forward", HandlerKind.CONSUMER)
        assert sorted(h.name for h in store.list_handlers(wf)) == [
            "forward",
            "new",
            PRODUCER,
            CONSUMER,
        ]
        assert self.begin_consumer(store, wf).workflow_version == 2

    def test_runs_are_listed_by_workflow_and_status(self, store: Store) -> None:
        wf, other = self.deploy(store), self.deploy(store)
        first = self.begin_consumer(store, wf)
        store.set_run_status(first.id, RunStatus.FAILED_LOGIC, failure=FailureKind.LOGIC)
        second = self.begin_producer(store, wf)
        elsewhere = self.begin_consumer(store, other)
        assert [r.id for r in store.list_runs(workflow=wf)] == [first.id, second.id]
        assert [r.id for r in store.list_runs(workflow=wf, status=RunStatus.ACTIVE)] == [second.id]
        assert [r.id for r in store.list_runs(workflow=wf, limit=1)] == [first.id]
        active = {r.id for r in store.active_runs()}
        assert {second.id, elsewhere.id} <= active
        assert first.id not in active
        with pytest.raises(NotFound):
            store.get_run("run_missing")

    def test_the_planners_run_queries(self, store: Store) -> None:
        wf = self.deploy(store)
        failed = self.begin_consumer(store, wf)
        store.set_run_status(failed.id, RunStatus.FAILED_LOGIC, failure=FailureKind.LOGIC)
        producer = self.begin_producer(store, wf)
        store.set_run_status(producer.id, RunStatus.PAUSED_TRANSIENT, failure=FailureKind.TRANSIENT)
        retry = store.begin_run(wf, CONSUMER, HandlerKind.CONSUMER, retry_of=failed.id)
        unfinished = (RunStatus.ACTIVE, RunStatus.PAUSED_TRANSIENT, RunStatus.FAILED_LOGIC)
        assert [r.id for r in store.list_runs(workflow=wf, status=unfinished)] == [
            failed.id,
            producer.id,
            retry.id,
        ]
        assert [r.id for r in store.list_runs(workflow=wf, status=())] == []
        newest = store.list_runs(workflow=wf, handler=CONSUMER, newest_first=True, limit=1)
        assert [r.id for r in newest] == [retry.id]
        assert [r.id for r in store.list_runs(workflow=wf, handler=PRODUCER)] == [producer.id]
        assert [r.id for r in store.list_runs(retry_of=failed.id)] == [retry.id]
        assert store.list_runs(retry_of=retry.id) == []
        assert store.get_run(retry.id) == retry, "a run read back differs from the one begun"
        assert store.get_run(retry.id).retry_of == failed.id
        every = [r.id for r in store.list_runs(workflow=wf, newest_first=True)]
        assert every == [retry.id, producer.id, failed.id]

    def test_queries_inside_reading_answer_nest_and_commits_go_on(self, store: Store) -> None:
        wf = self.deploy(store)
        with store.reading():
            before = store.list_runs(workflow=wf)
            assert store.list_workflows()
        run = self.begin_consumer(store, wf)
        with store.reading():
            assert [r.id for r in store.list_runs(workflow=wf)] == [run.id]
            with store.reading():
                assert store.get_run(run.id).id == run.id
        assert before == []
        assert store.get_run(run.id).status is RunStatus.ACTIVE

    def test_workflows_grants_and_the_audit_log(self, store: Store) -> None:
        wf = self.deploy(store)
        with pytest.raises(NotFound):
            store.get_workflow("no-such-workflow")
        store.grant_permission(wf, "sheets.write", actor="alice")
        store.grant_permission(wf, "gmail.read", actor="alice")
        record = store.grant_permission(wf, "sheets.write", actor="alice")
        assert record.grants == ["gmail.read", "sheets.write"]
        assert store.revoke_permission(wf, "gmail.read", actor="bob").grants == ["sheets.write"]
        with pytest.raises(NotFound):
            store.revoke_permission(wf, "gmail.read", actor="bob")
        assert wf in [w.name for w in store.list_workflows()]
        note = store.record_audit(
            actor="carol", action="retry", target="run_1", workflow=wf, detail={"why": "fixed"}
        )
        log = store.audit_log(workflow=wf)
        assert [(a.actor, a.action) for a in log] == [
            ("alice", "grant"),
            ("alice", "grant"),
            ("alice", "grant"),
            ("bob", "revoke"),
            ("carol", "retry"),
        ]
        assert log[-1] == note
        assert [a.seq for a in log] == sorted(a.seq for a in log)
        assert store.audit_log(workflow=wf, after_seq=log[2].seq) == log[3:]
        assert store.audit_log(workflow=wf, limit=2) == log[:2]

    def test_everything_survives_a_reopen(self, store: Store, reopen: Callable[[], Store]) -> None:
        wf = self.deploy(store)
        self.publish(store, wf, "a", "b")
        run = self.mutating(store, wf, "a")
        store.record_needs_reconcile(
            self.intent(store, run).id, next_reconcile_at=dt.datetime.now(dt.UTC)
        )
        store.pause_workflow(wf, actor="alice")
        store.acquire_lease(wf, "worker-1", ttl=dt.timedelta(seconds=30))
        assert snapshot(reopen(), [wf]) == snapshot(store, [wf])
