"""Clauses of the store contract that a plausible store bug breaks alone (issue 12, item 8).

Each test pins one clause with data chosen so that a store taking a shortcut
(matching ids without the workflow, lower-casing ids, batching publishes,
forgetting a cleared time) fails it.
"""

from __future__ import annotations

import datetime as dt
import uuid
from collections.abc import Callable

import pytest
from pydantic import JsonValue

from keep_sdk.conformance.stores._base import StoreTestBase
from keep_sdk.conformance.stores._support import (
    CONSUMER,
    PRODUCER,
    STANDARD_HANDLERS,
    FaultInjector,
    ManualClock,
)
from keep_sdk.errors import (
    ActiveRunExists,
    EventNotPending,
    LeaseLost,
    MutationConflict,
    NotFound,
    PhaseConflict,
    WorkflowPaused,
)
from keep_sdk.model import (
    EventStatus,
    HandlerKind,
    HandlerPhase,
    LedgerStatus,
    MutationApplied,
    PhaseTrace,
    PrepareResult,
    Reservation,
    RunPhase,
    RunStatus,
)
from keep_sdk.stores import HandlerSpec, Publication, Resolution, Store
from keep_sdk.stores.faults import FaultPoint

__all__ = ["ClauseTests"]

_TTL = dt.timedelta(seconds=30)


class ClauseTests(StoreTestBase):
    """Message-id identity, reservation scope, producer publishes, cleared times, ledger scope."""

    def test_message_ids_are_case_sensitive(self, store: Store) -> None:
        wf = self.deploy(store)
        self.publish(store, wf, "Msg-1", "msg-1")
        assert sorted(e.message_id for e in store.list_events(wf)) == ["Msg-1", "msg-1"]
        [found] = store.events_by_ids(wf, "in", ["msg-1"])
        assert found.message_id == "msg-1"
        run = self.prepared(store, wf, "Msg-1")
        store.commit_consumer_run(run.id)
        statuses = {e.message_id: e.status for e in store.list_events(wf)}
        assert statuses == {"Msg-1": EventStatus.CONSUMED, "msg-1": EventStatus.PENDING}

    def test_a_non_pending_id_in_any_topic_refuses_the_whole_reservation(
        self, store: Store
    ) -> None:
        wf = self.deploy(store)
        self.publish(store, wf, "a", "b")
        self.publish(store, wf, "x", "y", topic="other")
        earlier = self.prepared(store, wf, "y", topic="other")
        store.commit_consumer_run(earlier.id)
        run = self.begin_consumer(store, wf)
        result = PrepareResult(
            reservations=[
                Reservation(topic="in", ids=["a", "b"]),
                Reservation(topic="other", ids=["x", "y"]),
            ]
        )
        with pytest.raises(EventNotPending):
            store.save_prepare_result(run.id, result)
        statuses = {(e.topic, e.message_id): e.status for e in store.list_events(wf)}
        assert statuses == {
            ("in", "a"): EventStatus.PENDING,
            ("in", "b"): EventStatus.PENDING,
            ("other", "x"): EventStatus.PENDING,
            ("other", "y"): EventStatus.CONSUMED,
        }

    def test_a_commit_consumes_exactly_the_runs_own_reservations(self, store: Store) -> None:
        first, second = self.deploy(store), self.deploy(store)
        for wf in (first, second):
            self.publish(store, wf, "a", "b", "c")
        mine = self.prepared(store, first, "a", "b")
        theirs = self.prepared(store, second, "a")
        store.commit_consumer_run(mine.id)
        assert {e.message_id: e.status for e in store.list_events(first)} == {
            "a": EventStatus.CONSUMED,
            "b": EventStatus.CONSUMED,
            "c": EventStatus.PENDING,
        }
        assert {e.message_id: e.status for e in store.list_events(second)} == {
            "a": EventStatus.RESERVED,
            "b": EventStatus.PENDING,
            "c": EventStatus.PENDING,
        }
        [reserved] = store.events_by_ids(second, "in", ["a"])
        assert reserved.reserved_by == theirs.id

    @pytest.mark.parametrize("count", [1, 2, 3, 17, 64])
    def test_a_producer_commit_keeps_every_publish_whatever_their_number(
        self, store: Store, count: int
    ) -> None:
        wf = self.deploy(store)
        run = self.begin_producer(store, wf)
        publishes = [
            Publication(topic="in", message_id=f"p{i:03d}", title=f"P {i}", payload={"i": i})
            for i in range(count)
        ]
        commit = store.commit_producer_run(
            run.id, state={"n": count}, publishes=publishes, next_run_at=None
        )
        assert len(commit.published) == count
        events = store.list_events(wf)
        assert [(e.message_id, e.payload) for e in events] == [
            (f"p{i:03d}", {"i": i}) for i in range(count)
        ]
        assert {e.status for e in events} == {EventStatus.PENDING}
        assert {e.created_by for e in events} == {run.id}

    def test_cleared_wake_and_due_times_stay_cleared(
        self, store: Store, clock: ManualClock
    ) -> None:
        wf = self.deploy(store)
        store.set_wake_at(wf, CONSUMER, clock() + dt.timedelta(minutes=1))
        store.set_next_run_at(wf, PRODUCER, clock() + dt.timedelta(minutes=1))
        store.set_wake_at(wf, CONSUMER, None)
        store.set_next_run_at(wf, PRODUCER, None)
        clock.advance(3600)
        assert store.get_handler(wf, CONSUMER).wake_at is None
        assert store.get_handler(wf, PRODUCER).next_run_at is None
        assert [w for w in store.consumers_to_wake() if w.workflow == wf] == []
        assert [h for h in store.due_producers() if h.workflow == wf] == []

    def test_wake_and_due_times_survive_reopen(
        self, store: Store, clock: ManualClock, reopen: Callable[[], Store]
    ) -> None:
        wf = self.deploy(store)
        wake = clock() + dt.timedelta(minutes=2)
        due = clock() + dt.timedelta(minutes=3)
        store.set_wake_at(wf, CONSUMER, wake)
        store.set_next_run_at(wf, PRODUCER, due)
        again = reopen()
        assert again.get_handler(wf, CONSUMER).wake_at == wake
        assert again.get_handler(wf, PRODUCER).next_run_at == due
        clock.set(wake)
        assert [w.handler for w in again.consumers_to_wake() if w.workflow == wf] == [CONSUMER]
        assert [h for h in again.due_producers() if h.workflow == wf] == []
        clock.set(due)
        assert [h.name for h in again.due_producers() if h.workflow == wf] == [PRODUCER]

    def test_ledger_entries_belong_to_their_own_run(self, store: Store) -> None:
        first, second = self.deploy(store), self.deploy(store)
        runs = [self.mutating(store, wf, "a") for wf in (first, second)]
        entries = [self.intent(store, run) for run in runs]
        assert [store.ledger_entry_for_run(r.id) for r in runs] == entries
        store.record_mutation_applied(entries[0].id, {"rowId": 1})
        assert store.get_ledger_entry(entries[1].id) == entries[1]
        assert store.get_ledger_entry(entries[1].id).status is LedgerStatus.IN_FLIGHT
        assert [e.id for e in store.list_ledger(workflow=second)] == [entries[1].id]

    def test_the_owner_acquiring_its_live_lease_again_extends_it(
        self, store: Store, clock: ManualClock
    ) -> None:
        wf = self.deploy(store)
        first = store.acquire_lease(wf, "w1", ttl=_TTL)
        assert first is not None
        clock.advance(20)
        again = store.acquire_lease(wf, "w1", ttl=_TTL)
        assert again is not None
        assert (again.token, again.expires_at) == (first.token, clock() + _TTL)
        clock.advance(20)
        assert store.acquire_lease(wf, "w2", ttl=_TTL) is None
        assert store.get_lease(wf) == again

    def test_a_lost_lease_error_names_the_action_refused(
        self, store: Store, clock: ManualClock
    ) -> None:
        wf = self.deploy(store)
        old = store.acquire_lease(wf, "w1", ttl=_TTL)
        assert old is not None
        clock.advance(31)
        assert store.acquire_lease(wf, "w2", ttl=_TTL) is not None
        with pytest.raises(LeaseLost, match="cannot heartbeat"):
            store.heartbeat_lease(old, ttl=_TTL)
        with pytest.raises(LeaseLost, match="cannot release"):
            store.release_lease(old)

    def test_releasing_an_expired_lease_nobody_took_is_quiet(
        self, store: Store, clock: ManualClock
    ) -> None:
        wf = self.deploy(store)
        lease = store.acquire_lease(wf, "w1", ttl=_TTL)
        assert lease is not None
        clock.advance(60)
        store.release_lease(lease)
        released = store.get_lease(wf)
        assert released is not None
        assert released.expires_at <= clock()
        taken = store.acquire_lease(wf, "w2", ttl=_TTL)
        assert taken is not None
        assert taken.token == lease.token + 1

    def test_an_audit_record_keeps_every_field(self, store: Store) -> None:
        wf = self.deploy(store)
        entry = store.record_audit(
            actor="alice", action="note", target="run_1", workflow=wf, detail={"why": "checked"}
        )
        [found] = [e for e in store.audit_log(workflow=wf) if e.action == "note"]
        assert found == entry
        assert (found.actor, found.target, found.workflow, found.detail) == (
            "alice",
            "run_1",
            wf,
            {"why": "checked"},
        )

    def test_a_resolution_is_audited_with_its_run_and_detail_and_stamps_the_run(
        self, store: Store, clock: ManualClock
    ) -> None:
        wf = self.deploy(store)
        run = self.mutating(store, wf, "a")
        entry = self.intent(store, run)
        entry = store.record_needs_reconcile(
            entry.id, next_reconcile_at=clock() + dt.timedelta(seconds=5), error="timeout"
        )
        store.record_mutation_indeterminate(entry.id, error="gave up")
        store.set_run_status(run.id, RunStatus.PAUSED_RECONCILIATION)
        clock.advance(60)
        resolved = store.resolve_mutation(
            entry.id, Resolution.HAPPENED, actor="alice", detail="saw the row", result={"rowId": 7}
        )
        assert resolved.next_reconcile_at is None
        assert resolved.result == {"rowId": 7}
        assert (resolved.updated_at, resolved.resolved_at) == (clock(), clock())
        after = store.get_run(run.id)
        assert after.updated_at == clock()
        assert after.mutation_result == MutationApplied(result={"rowId": 7})
        [audit] = [a for a in store.audit_log(workflow=wf) if a.action.startswith("resolve")]
        assert (audit.actor, audit.action, audit.target) == (
            "alice",
            "resolve_mutation:happened",
            entry.id,
        )
        assert audit.detail == {"run": run.id, "detail": "saw the row"}

    def test_settling_an_entry_clears_its_reconcile_time_and_keeps_the_error(
        self, store: Store, clock: ManualClock
    ) -> None:
        wf = self.deploy(store)
        for settle in ("applied", "failed"):
            run = self.mutating(store, wf, f"m-{settle}")
            entry = self.intent(store, run)
            entry = store.record_needs_reconcile(
                entry.id, next_reconcile_at=clock() + dt.timedelta(seconds=5), error="timed out"
            )
            assert entry.error == "timed out"
            assert store.get_ledger_entry(entry.id).error == "timed out"
            if settle == "applied":
                done = store.record_mutation_applied(entry.id, {"ok": True})
            else:
                done = store.record_mutation_failed(entry.id, error="refused")
            assert done.next_reconcile_at is None
            assert store.get_ledger_entry(entry.id).next_reconcile_at is None
            assert [
                e
                for e in store.due_reconciliations(clock() + dt.timedelta(days=1))
                if e.id == entry.id
            ] == []
            store.set_run_status(run.id, RunStatus.FAILED_INTERNAL)

    def test_due_reconciliations_come_earliest_first_and_workflows_by_name(
        self, store: Store, clock: ManualClock
    ) -> None:
        names = sorted((self.deploy(store) for _ in range(3)), reverse=True)
        entries = []
        for offset, wf in zip((30, 10, 20), names, strict=True):
            run = self.mutating(store, wf, "a")
            entry = self.intent(store, run)
            entries.append(
                store.record_needs_reconcile(
                    entry.id, next_reconcile_at=clock() + dt.timedelta(seconds=offset)
                )
            )
        clock.advance(60)
        due = [e.id for e in store.due_reconciliations() if e.workflow in names]
        assert due == [entries[1].id, entries[2].id, entries[0].id]
        listed = [w.name for w in store.list_workflows() if w.name in names]
        assert listed == sorted(names)

    def test_grants_and_revokes_are_audited_with_the_permission(self, store: Store) -> None:
        wf = self.deploy(store)
        store.grant_permission(wf, "sheets.write", actor="alice")
        store.revoke_permission(wf, "sheets.write", actor="bob")
        found = [(a.actor, a.action, a.target, a.detail) for a in store.audit_log(workflow=wf)]
        assert found == [
            ("alice", "grant", wf, {"permission": "sheets.write"}),
            ("bob", "revoke", wf, {"permission": "sheets.write"}),
        ]

    def test_an_indeterminate_entry_keeps_the_reason(
        self, store: Store, clock: ManualClock
    ) -> None:
        wf = self.deploy(store)
        run = self.mutating(store, wf, "a")
        entry = self.intent(store, run)
        uncertain = store.record_needs_reconcile(
            entry.id, next_reconcile_at=clock() + dt.timedelta(seconds=5), error="timed out"
        )
        assert store.get_ledger_entry(entry.id) == uncertain, (
            "an entry read back differs from the one recorded (its reconcile time or attempts?)"
        )
        assert uncertain.next_reconcile_at == clock() + dt.timedelta(seconds=5)
        settled = store.record_mutation_indeterminate(entry.id, error="reconcile could not tell")
        assert settled.error == "reconcile could not tell"
        assert settled.next_reconcile_at is None
        assert store.get_ledger_entry(entry.id) == settled

    def test_a_wake_names_the_wake_time(self, store: Store, clock: ManualClock) -> None:
        wf = self.deploy(store)
        wake = clock() + dt.timedelta(minutes=1)
        store.set_wake_at(wf, CONSUMER, wake)
        clock.set(wake)
        [found] = [w for w in store.consumers_to_wake() if w.workflow == wf]
        assert (found.handler, found.wake_at) == (CONSUMER, wake)

    def test_not_found_names_what_is_missing(self, store: Store) -> None:
        wf = self.deploy(store)
        with pytest.raises(NotFound, match="no version 99"):
            store.get_workflow_version(wf, 99)
        with pytest.raises(NotFound, match="evt-missing"):
            store.get_event("evt-missing")

    def test_lists_are_scoped_limited_and_ordered(self, store: Store, clock: ManualClock) -> None:
        first, second = self.deploy(store), self.deploy(store)
        assert {h.workflow for h in store.list_handlers(first)} == {first}
        for wf in (first, second):
            store.record_audit(actor="alice", action="note", target=wf, workflow=wf)
        assert {a.workflow for a in store.audit_log(workflow=second)} == {second}
        runs = [self.mutating(store, wf, "a") for wf in (first, second)]
        for run in runs:
            self.intent(store, run)
        assert len(store.list_ledger(limit=1)) == 1
        store.set_next_run_at(first, PRODUCER, clock() + dt.timedelta(seconds=20))
        store.set_next_run_at(second, PRODUCER, clock() + dt.timedelta(seconds=10))
        clock.advance(30)
        due = [h.workflow for h in store.due_producers() if h.workflow in (first, second)]
        assert due == [second, first]

    def test_a_producer_commit_records_its_state_on_the_run_and_handler(
        self, store: Store, faults: FaultInjector
    ) -> None:
        wf = self.deploy(store)
        run = self.begin_producer(store, wf)
        faults.disarm()
        faults.calls = []
        commit = store.commit_producer_run(
            run.id,
            state={"cursor": 3},
            publishes=[Publication(topic="in", message_id="e1", title="E1")],
            next_run_at=None,
        )
        assert commit.run.output_state == {"cursor": 3}
        handler = store.get_handler(wf, PRODUCER)
        assert (handler.has_state, handler.state) == (True, {"cursor": 3})
        assert FaultPoint.COMMIT_PRODUCER_STATE in faults.calls
        assert FaultPoint.COMMIT_PRODUCER_PUBLISH in faults.calls

    def test_skipping_is_stamped_audited_with_the_reason_and_refusals_say_why(
        self, store: Store, clock: ManualClock
    ) -> None:
        wf = self.deploy(store)
        self.publish(store, wf, "a")
        [event] = store.list_events(wf)
        clock.advance(5)
        skipped = store.skip_event(event.id, actor="alice", reason="spam")
        assert (skipped.status, skipped.updated_at) == (EventStatus.SKIPPED, clock())
        [audit] = [a for a in store.audit_log(workflow=wf) if a.target == event.id]
        assert (audit.actor, audit.detail) == ("alice", {"reason": "spam"})
        with pytest.raises(EventNotPending, match="only a pending event can be skipped"):
            store.skip_event(event.id, actor="bob")

    def test_every_event_change_is_stamped_with_the_time(
        self, store: Store, clock: ManualClock
    ) -> None:
        wf = self.deploy(store)
        self.publish(store, wf, "a")

        def stamp() -> dt.datetime:
            [event] = store.list_events(wf)
            return event.updated_at

        clock.advance(5)
        store.publish(wf, Publication(topic="in", message_id="a", title="again"))
        assert stamp() == clock()
        clock.advance(5)
        run = self.begin_consumer(store, wf)
        store.save_prepare_result(
            run.id, PrepareResult(reservations=[Reservation(topic="in", ids=["a"])])
        )
        assert stamp() == clock()
        clock.advance(5)
        store.commit_consumer_run(run.id)
        assert stamp() == clock()

    def test_commit_points_call_the_fault_hook_at_their_named_points(
        self, store: Store, faults: FaultInjector
    ) -> None:
        wf = self.deploy(store)
        self.publish(store, wf, "a")
        faults.disarm()
        faults.calls = []
        run = self.begin_consumer(store, wf)
        store.save_prepare_result(
            run.id, PrepareResult(reservations=[Reservation(topic="in", ids=["a"])])
        )
        store.commit_consumer_run(
            run.id,
            state={"n": 2},
            publishes=[Publication(topic="out", message_id="b", title="B")],
        )
        assert {
            FaultPoint.SAVE_PREPARE_EVENT,
            FaultPoint.SAVE_PREPARE_RUN,
            FaultPoint.COMMIT_CONSUMER_EVENT,
            FaultPoint.COMMIT_CONSUMER_STATE,
            FaultPoint.COMMIT_CONSUMER_PUBLISH,
        } <= set(faults.calls)
        assert None not in faults.calls

    def test_ledger_runs_and_workflows_are_stamped_when_they_change(
        self, store: Store, clock: ManualClock, faults: FaultInjector
    ) -> None:
        wf = self.deploy(store)
        faults.disarm()
        faults.calls = []
        clock.advance(5)
        store.deploy(wf, "v2", {"topics": ["in"]}, handlers=STANDARD_HANDLERS)
        assert store.get_workflow(wf).updated_at == clock()
        assert {FaultPoint.DEPLOY_VERSION, FaultPoint.DEPLOY_HANDLERS} <= set(faults.calls)
        clock.advance(5)
        store.pause_workflow(wf, actor="alice", reason="holiday")
        assert store.get_workflow(wf).updated_at == clock()
        [pause] = [a for a in store.audit_log(workflow=wf) if a.action == "pause"]
        assert pause.detail == {"reason": "holiday"}
        store.resume_workflow(wf, actor="alice")
        run = self.mutating(store, wf, "a")
        entry = self.intent(store, run)
        clock.advance(5)
        faults.calls = []
        applied = store.record_mutation_applied(entry.id, {"rowId": 1})
        assert applied.updated_at == clock()
        assert store.get_run(run.id).updated_at == clock()
        assert FaultPoint.LEDGER_ENTRY in faults.calls

    def test_pages_filter_by_workflow_and_status_together_on_every_page(self, store: Store) -> None:
        pager = self.pager(store)
        mine, other = self.deploy(store), self.deploy(store)
        for wf in (mine, other):
            for n, status in enumerate((RunStatus.FAILED_LOGIC, RunStatus.CRASHED) * 2):
                run = self.mutating(store, wf, f"{wf}-{n}")
                entry = self.intent(store, run)
                if status is RunStatus.CRASHED:
                    store.record_mutation_failed(entry.id, error="refused")
                store.set_run_status(run.id, status)
        failed = [r.id for r in store.list_runs(workflow=mine, status=RunStatus.FAILED_LOGIC)]
        assert len(failed) == 2
        first = pager.page_runs(workflow=mine, status=RunStatus.FAILED_LOGIC, limit=1)
        assert [r.id for r in first] == failed[-1:]
        rest = pager.page_runs(
            workflow=mine, status=RunStatus.FAILED_LOGIC, before=first[0].id, limit=10
        )
        assert [r.id for r in rest] == failed[:1]
        in_flight = [
            e.id for e in store.list_ledger(workflow=mine) if e.status is LedgerStatus.IN_FLIGHT
        ]
        assert len(in_flight) == 2
        top = pager.page_ledger(workflow=mine, status=LedgerStatus.IN_FLIGHT, limit=1)
        assert [e.id for e in top] == in_flight[-1:]
        tail = pager.page_ledger(
            workflow=mine, status=LedgerStatus.IN_FLIGHT, before=top[0].id, limit=10
        )
        assert [e.id for e in tail] == in_flight[:1]

    def test_an_unknown_page_cursor_is_named(self, store: Store) -> None:
        pager = self.pager(store)
        wf = self.deploy(store)
        with pytest.raises(NotFound, match="evt-nowhere-1"):
            pager.page_events(wf, before="evt-nowhere-1", limit=5)
        with pytest.raises(NotFound, match="run-nowhere-2"):
            pager.page_runs(before="run-nowhere-2", limit=5)
        with pytest.raises(NotFound, match="mut-nowhere-3"):
            pager.page_ledger(before="mut-nowhere-3", limit=5)

    def test_every_missing_thing_is_named(self, store: Store) -> None:
        wf = self.deploy(store)
        with pytest.raises(NotFound, match="wf-nowhere-4"):
            store.get_workflow("wf-nowhere-4")
        with pytest.raises(NotFound, match="handler-nowhere-5"):
            store.get_handler(wf, "handler-nowhere-5")
        with pytest.raises(NotFound, match="run-nowhere-6"):
            store.get_run("run-nowhere-6")
        with pytest.raises(NotFound, match="mut-nowhere-7"):
            store.get_ledger_entry("mut-nowhere-7")
        with pytest.raises(NotFound, match=r"sheets\.nowhere"):
            store.revoke_permission(wf, "sheets.nowhere", actor="alice")

    def test_handlers_are_listed_for_every_workflow_or_one(self, store: Store) -> None:
        first, second = self.deploy(store), self.deploy(store)
        every = {(h.workflow, h.name) for h in store.list_handlers()}
        names = {spec.name for spec in STANDARD_HANDLERS}
        assert {(wf, n) for wf in (first, second) for n in names} <= every
        assert {h.workflow for h in store.list_handlers(second)} == {second}
        with pytest.raises(NotFound):
            store.list_handlers("wf-nowhere-8")

    def test_a_deploy_keeps_the_manifest_and_handlers_and_only_producers_come_due(
        self, store: Store, clock: ManualClock
    ) -> None:
        manifest: dict[str, JsonValue] = {"topics": ["in", "out"], "note": "v1"}
        handlers = (
            HandlerSpec(name=PRODUCER, kind=HandlerKind.PRODUCER),
            HandlerSpec(name=CONSUMER, kind=HandlerKind.CONSUMER, subscribe=["out", "in", "in"]),
        )
        name = f"wf-{uuid.uuid4().hex[:12]}"
        store.deploy(name, "v1 source", manifest, handlers=handlers)
        version = store.get_workflow_version(name, 1)
        assert (version.source, version.manifest) == ("v1 source", manifest)
        assert [(h.name, h.kind) for h in version.handlers] == [
            (PRODUCER, HandlerKind.PRODUCER),
            (CONSUMER, HandlerKind.CONSUMER),
        ]
        consumer = store.get_handler(name, CONSUMER)
        assert (consumer.subscribe, consumer.next_run_at) == (["in", "out"], None)
        assert store.get_handler(name, PRODUCER).next_run_at == clock()
        clock.advance(5)
        changed: dict[str, JsonValue] = {"topics": ["in"], "note": "v2"}
        assert store.deploy_if_changed(name, "v2 source", changed, handlers=handlers) == (2, True)
        assert store.get_workflow_version(name).manifest == changed
        assert store.get_handler(name, CONSUMER).next_run_at is None
        assert store.get_handler(name, PRODUCER).next_run_at == clock()

    def test_changes_to_one_workflow_leave_another_with_the_same_names_alone(
        self, store: Store, clock: ManualClock
    ) -> None:
        """Two workflows share handler names, topics, version numbers and a permission;
        redeploying, granting and revoking on one must not read or write the other's rows."""
        handlers = (
            HandlerSpec(name=PRODUCER, kind=HandlerKind.PRODUCER),
            HandlerSpec(name=CONSUMER, kind=HandlerKind.CONSUMER, subscribe=["in", "out"]),
        )
        token = uuid.uuid4().hex[:10]
        first, second = f"wf-a-{token}", f"wf-b-{token}"
        for name in (first, second):
            store.deploy(name, f"{name} v1", {"topics": ["in", "out"]}, handlers=handlers)
            store.grant_permission(name, "sheets.write", actor="alice")
            store.grant_permission(name, "gmail.send", actor="alice")
        untouched = (
            store.get_workflow(second),
            store.get_workflow_version(second, 1),
            store.list_handlers(second),
        )
        clock.advance(5)
        narrower = (
            HandlerSpec(name=PRODUCER, kind=HandlerKind.PRODUCER),
            HandlerSpec(name=CONSUMER, kind=HandlerKind.CONSUMER, subscribe=["in"]),
        )
        store.deploy(first, f"{first} v2", {"topics": ["in"]}, handlers=narrower)
        store.revoke_permission(first, "sheets.write", actor="bob")
        assert store.get_handler(first, CONSUMER).subscribe == ["in"]
        assert store.get_workflow(first).grants == ["gmail.send"]
        assert store.get_workflow_version(first, 1).source == f"{first} v1"
        assert store.get_workflow_version(first, 2).source == f"{first} v2"
        after = (
            store.get_workflow(second),
            store.get_workflow_version(second, 1),
            store.list_handlers(second),
        )
        assert after == untouched, "a change to one workflow changed another's rows"
        assert store.get_workflow_version(second, 1).source == f"{second} v1"
        assert [h.subscribe for h in store.list_handlers(second)] == [[], ["in", "out"]]
        listed = [(h.workflow, h.name) for h in store.list_handlers() if token in h.workflow]
        assert listed == sorted(listed), "list_handlers() is not by workflow, then name"
        assert [h.subscribe for h in store.list_handlers() if h.workflow == second] == [
            [],
            ["in", "out"],
        ]

    def test_a_redeploy_rewrites_each_changed_handler_and_only_that_handler(
        self, store: Store, clock: ManualClock
    ) -> None:
        """A handler may change kind and subscriptions between versions; the new version's
        records are what is read back, by name whatever order they were declared in, and a
        handler the new version leaves as it was keeps its subscriptions (a write keyed by
        the workflow alone loses a sibling's)."""
        name = f"wf-{uuid.uuid4().hex[:12]}"
        topics: dict[str, JsonValue] = {"topics": ["in", "out"]}
        store.deploy(
            name,
            "v1",
            topics,
            handlers=(
                HandlerSpec(name="third", kind=HandlerKind.CONSUMER, subscribe=["out"]),
                HandlerSpec(name="first", kind=HandlerKind.PRODUCER),
                HandlerSpec(name="second", kind=HandlerKind.CONSUMER, subscribe=["in"]),
            ),
        )
        third = store.get_handler(name, "third")
        clock.advance(5)
        store.deploy(
            name,
            "v2",
            topics,
            handlers=(
                HandlerSpec(name="first", kind=HandlerKind.CONSUMER, subscribe=["out"]),
                HandlerSpec(name="second", kind=HandlerKind.CONSUMER, subscribe=["in", "out"]),
                HandlerSpec(name="third", kind=HandlerKind.CONSUMER, subscribe=["out"]),
            ),
        )
        listed = [(h.name, h.kind, h.subscribe) for h in store.list_handlers(name)]
        assert listed == [
            ("first", HandlerKind.CONSUMER, ["out"]),
            ("second", HandlerKind.CONSUMER, ["in", "out"]),
            ("third", HandlerKind.CONSUMER, ["out"]),
        ]
        assert store.get_handler(name, "third").subscribe == third.subscribe
        clock.advance(5)
        store.deploy(
            name,
            "v3",
            topics,
            handlers=(
                HandlerSpec(name="first", kind=HandlerKind.PRODUCER),
                HandlerSpec(name="second", kind=HandlerKind.CONSUMER, subscribe=["in", "out"]),
                HandlerSpec(name="third", kind=HandlerKind.CONSUMER, subscribe=["out"]),
            ),
        )
        first = store.get_handler(name, "first")
        assert (first.kind, first.subscribe, first.next_run_at) == (
            HandlerKind.PRODUCER,
            [],
            clock(),
        )
        assert [h.subscribe for h in store.list_handlers(name)][1:] == [["in", "out"], ["out"]]

    def test_handler_times_are_stamped_and_naive_times_are_utc(
        self, store: Store, clock: ManualClock
    ) -> None:
        wf = self.deploy(store)
        clock.advance(5)
        woken = store.set_wake_at(wf, CONSUMER, clock() + dt.timedelta(minutes=1))
        assert woken.updated_at == clock()
        assert store.get_handler(wf, CONSUMER).updated_at == clock()
        clock.advance(5)
        naive = dt.datetime(2031, 5, 6, 7, 8, 9)
        store.set_next_run_at(wf, PRODUCER, naive)
        handler = store.get_handler(wf, PRODUCER)
        assert handler.updated_at == clock()
        assert handler.next_run_at == naive.replace(tzinfo=dt.UTC)
        assert handler.next_run_at is not None
        assert handler.next_run_at.utcoffset() == dt.timedelta(0)

    def test_a_persons_workflow_changes_call_their_fault_points_and_are_stamped(
        self, store: Store, clock: ManualClock, faults: FaultInjector
    ) -> None:
        wf = self.deploy(store)
        changes: list[tuple[FaultPoint, Callable[[], object]]] = [
            (FaultPoint.PAUSE_WORKFLOW, lambda: store.pause_workflow(wf, actor="a")),
            (FaultPoint.RESUME_WORKFLOW, lambda: store.resume_workflow(wf, actor="a")),
            (FaultPoint.GRANT_WORKFLOW, lambda: store.grant_permission(wf, "x.y", actor="a")),
            (FaultPoint.REVOKE_WORKFLOW, lambda: store.revoke_permission(wf, "x.y", actor="a")),
        ]
        for point, change in changes:
            clock.advance(5)
            faults.calls = []
            returned = change()
            assert faults.calls == [point]
            assert store.get_workflow(wf) == returned
            assert store.get_workflow(wf).updated_at == clock()

    def test_a_second_intent_names_the_first_and_an_intent_at_prepared_stamps_the_run(
        self, store: Store, clock: ManualClock
    ) -> None:
        wf = self.deploy(store)
        run = self.prepared(store, wf, "a")
        clock.advance(5)
        entry = self.intent(store, run)
        assert store.get_run(run.id).updated_at == clock()
        with pytest.raises(MutationConflict, match=entry.id):
            self.intent(store, store.get_run(run.id))

    def test_a_refused_settlement_names_the_status_it_was_refused(self, store: Store) -> None:
        wf = self.deploy(store)
        entry = self.intent(store, self.mutating(store, wf, "a"))
        store.record_mutation_applied(entry.id, {"rowId": 1})
        with pytest.raises(MutationConflict, match="can become failed"):
            store.record_mutation_failed(entry.id, error="late")
        with pytest.raises(MutationConflict, match="can become indeterminate"):
            store.record_mutation_indeterminate(entry.id)

    def test_resolving_clears_the_reconcile_time_keeps_an_unapplied_result_and_faults(
        self, store: Store, clock: ManualClock, faults: FaultInjector
    ) -> None:
        wf = self.deploy(store)
        for resolution in (Resolution.DIDNT_HAPPEN, Resolution.SKIP):
            run = self.mutating(store, wf, f"r-{resolution.value}")
            entry = self.intent(store, run)
            store.record_needs_reconcile(
                entry.id, next_reconcile_at=clock() + dt.timedelta(seconds=5), error="timeout"
            )
            store.set_run_status(run.id, RunStatus.PAUSED_RECONCILIATION)
            clock.advance(60)
            faults.calls = []
            resolved = store.resolve_mutation(
                entry.id, resolution, actor="alice", result={"rowId": 99}
            )
            assert FaultPoint.RESOLVE_ENTRY in faults.calls
            assert None not in faults.calls
            assert resolved.next_reconcile_at is None
            assert resolved.result is None
            assert store.get_ledger_entry(entry.id) == resolved
            assert [e for e in store.due_reconciliations() if e.id == entry.id] == []
            store.set_run_status(run.id, RunStatus.FAILED_INTERNAL)

    def test_every_run_change_is_stamped_and_keeps_its_trace(
        self, store: Store, clock: ManualClock
    ) -> None:
        wf = self.deploy(store)
        self.publish(store, wf, "a")
        begun = self.begin_consumer(store, wf)
        trace = [PhaseTrace(phase=HandlerPhase.PREPARE, wall_time_s=0.5)]
        clock.advance(5)
        prepared = store.save_prepare_result(
            begun.id, PrepareResult(reservations=[Reservation(topic="in", ids=["a"])])
        )
        assert prepared.updated_at == clock()
        clock.advance(5)
        paused = store.set_run_status(
            begun.id, RunStatus.PAUSED_TRANSIENT, error="later", trace=trace
        )
        assert (paused.updated_at, paused.trace) == (clock(), trace)
        assert store.get_run(begun.id).trace == trace
        store.set_run_status(begun.id, RunStatus.ACTIVE)
        clock.advance(5)
        mutating = store.advance_phase(begun.id, RunPhase.MUTATING)
        assert mutating.updated_at == clock()
        entry = self.intent(store, mutating)
        store.record_mutation_applied(entry.id, {"rowId": 1})
        clock.advance(5)
        more = [PhaseTrace(phase=HandlerPhase.NEXT)]
        committed = store.commit_consumer_run(begun.id, trace=more).run
        assert (committed.updated_at, committed.trace) == (clock(), trace + more)
        assert store.get_run(begun.id) == committed

    def test_released_reservations_are_stamped_and_release_calls_its_fault_point(
        self, store: Store, clock: ManualClock, faults: FaultInjector
    ) -> None:
        wf = self.deploy(store)
        run = self.prepared(store, wf, "a", "b")
        clock.advance(5)
        faults.calls = []
        store.set_run_status(run.id, RunStatus.CRASHED, release_reservations=True)
        assert faults.calls == [FaultPoint.SET_RUN_STATUS]
        events = store.list_events(wf)
        assert {(e.status, e.reserved_by, e.updated_at) for e in events} == {
            (EventStatus.PENDING, None, clock())
        }
        retry = self.prepared(store, wf, "a")
        store.set_run_status(retry.id, RunStatus.CRASHED)
        faults.calls = []
        clock.advance(5)
        again = store.begin_run(wf, CONSUMER, HandlerKind.CONSUMER, retry_of=retry.id)
        assert FaultPoint.BEGIN_RUN in faults.calls
        assert None not in faults.calls
        [released] = [e for e in store.list_events(wf) if e.message_id == "a"]
        assert (released.status, released.reserved_by) == (EventStatus.PENDING, None)
        assert released.updated_at == clock()
        store.set_run_status(again.id, RunStatus.CRASHED)
        self.publish(store, wf, "c")
        [pending] = [e for e in store.list_events(wf) if e.message_id == "c"]
        faults.calls = []
        store.skip_event(pending.id, actor="alice")
        assert faults.calls == [FaultPoint.SKIP_EVENT]

    def test_refused_runs_name_the_workflow_handler_and_active_run(self, store: Store) -> None:
        wf = self.deploy(store)
        with pytest.raises(NotFound, match=f"{wf}.*handler-nowhere-9"):
            store.begin_run(wf, "handler-nowhere-9", HandlerKind.CONSUMER)
        with pytest.raises(PhaseConflict, match=f"{wf}/{PRODUCER}"):
            store.begin_run(wf, PRODUCER, HandlerKind.CONSUMER)
        first = self.begin_consumer(store, wf)
        with pytest.raises(ActiveRunExists, match=f"{wf}.*{first.id}"):
            self.begin_consumer(store, wf)
        store.set_run_status(first.id, RunStatus.PAUSED_TRANSIENT)
        second = self.begin_consumer(store, wf)
        with pytest.raises(ActiveRunExists, match=f"{wf}.*{second.id}"):
            store.set_run_status(first.id, RunStatus.ACTIVE)
        store.pause_workflow(wf, actor="alice")
        store.set_run_status(second.id, RunStatus.CRASHED)
        with pytest.raises(WorkflowPaused, match=wf):
            self.begin_consumer(store, wf)

    def test_a_consumer_run_never_commits_over_an_unsettled_mutation(self, store: Store) -> None:
        wf = self.deploy(store)
        run = self.mutating(store, wf, "a")
        entry = self.intent(store, run)
        store.record_mutation_failed(entry.id, error="refused")
        store.advance_phase(run.id, RunPhase.EMITTING)
        with pytest.raises(MutationConflict, match="failed; it must be applied or resolved"):
            store.commit_consumer_run(run.id)
        assert store.get_ledger_entry(entry.id).status is LedgerStatus.FAILED
        assert store.get_run(run.id).status is RunStatus.ACTIVE
        assert [e.status for e in store.list_events(wf)] == [EventStatus.RESERVED]
