"""Publishing is idempotent per (workflow, topic, messageId); skipping is a person's act."""

from __future__ import annotations

import pytest

from keep_sdk.conformance.stores._base import StoreTestBase
from keep_sdk.conformance.stores._support import ManualClock
from keep_sdk.errors import EventNotPending, NotFound
from keep_sdk.model import EventStatus, MutationSkipped, RunPhase
from keep_sdk.stores import Publication, PublishOutcome, Resolution, Store

__all__ = ["PublishTests"]


class PublishTests(StoreTestBase):
    """Publish outcomes (created, replaced, duplicate), event lookups, skipping."""

    def test_publish_creates_a_pending_event(self, store: Store) -> None:
        wf = self.deploy(store)
        result = store.publish(
            wf,
            Publication(topic="in", message_id="m1", title="Email 1", payload={"a": 1}),
            created_by="run_x",
        )
        assert result.outcome is PublishOutcome.CREATED
        event = result.event
        assert (event.workflow, event.topic, event.message_id) == (wf, "in", "m1")
        assert (event.title, event.payload, event.status) == (
            "Email 1",
            {"a": 1},
            EventStatus.PENDING,
        )
        assert event.created_by == "run_x"
        assert event.attempt == 0
        assert store.get_event(event.id) == event

    def test_repeat_while_pending_replaces_title_and_payload(
        self, store: Store, clock: ManualClock
    ) -> None:
        wf = self.deploy(store)
        first = store.publish(wf, Publication(topic="in", message_id="m1", title="v1", payload=1))
        clock.advance(1)
        again = store.publish(wf, Publication(topic="in", message_id="m1", title="v2", payload=2))
        assert again.outcome is PublishOutcome.REPLACED
        assert again.event.id == first.event.id
        assert (again.event.title, again.event.payload) == ("v2", 2)
        assert store.list_events(wf) == [again.event]

    def test_repeat_after_reservation_is_a_duplicate_that_changes_nothing(
        self, store: Store
    ) -> None:
        wf = self.deploy(store)
        self.prepared(store, wf, "m1")
        before = store.list_events(wf)
        again = store.publish(wf, Publication(topic="in", message_id="m1", title="new", payload=9))
        assert again.outcome is PublishOutcome.DUPLICATE
        assert again.event == before[0]
        assert store.list_events(wf) == before

    def test_repeat_after_consumption_is_a_duplicate(self, store: Store) -> None:
        wf = self.deploy(store)
        run = self.prepared(store, wf, "m1")
        store.commit_consumer_run(run.id)
        before = store.list_events(wf)
        assert before[0].status is EventStatus.CONSUMED
        again = store.publish(wf, Publication(topic="in", message_id="m1", title="new"))
        assert again.outcome is PublishOutcome.DUPLICATE
        assert store.list_events(wf) == before
        assert store.pending_events(wf, "in", limit=10) == []

    def test_repeat_after_skip_is_a_duplicate(self, store: Store) -> None:
        wf = self.deploy(store)
        self.publish(store, wf, "m1")
        event = store.list_events(wf)[0]
        store.skip_event(event.id, actor="alice", reason="spam")
        again = store.publish(wf, Publication(topic="in", message_id="m1", title="new"))
        assert again.outcome is PublishOutcome.DUPLICATE
        assert store.get_event(event.id).status is EventStatus.SKIPPED
        assert store.get_event(event.id).title == "m1"

    def test_repeat_after_a_skipped_mutation_is_a_duplicate(self, store: Store) -> None:
        wf = self.deploy(store)
        run = self.mutating(store, wf, "m1")
        entry = self.intent(store, run)
        store.record_mutation_indeterminate(entry.id, error="timeout")
        store.resolve_mutation(entry.id, Resolution.SKIP, actor="alice")
        store.commit_consumer_run(run.id, mutation_result=MutationSkipped())
        assert store.list_events(wf)[0].status is EventStatus.SKIPPED
        again = store.publish(wf, Publication(topic="in", message_id="m1", title="new"))
        assert again.outcome is PublishOutcome.DUPLICATE

    def test_the_key_is_workflow_topic_and_message_id(self, store: Store) -> None:
        wf, other = self.deploy(store), self.deploy(store)
        outcomes = [
            store.publish(wf, Publication(topic="in", message_id="m1", title="a")).outcome,
            store.publish(wf, Publication(topic="other", message_id="m1", title="b")).outcome,
            store.publish(other, Publication(topic="in", message_id="m1", title="c")).outcome,
        ]
        assert outcomes == [PublishOutcome.CREATED] * 3
        assert len(store.list_events(wf)) == 2
        assert [e.title for e in store.list_events(other)] == ["c"]

    def test_publish_to_an_undeployed_workflow_is_not_found(self, store: Store) -> None:
        with pytest.raises(NotFound):
            store.publish("no-such-workflow", Publication(topic="in", message_id="m", title="t"))

    def test_events_by_ids_follow_the_requested_order_and_skip_unknown_ids(
        self, store: Store
    ) -> None:
        wf = self.deploy(store)
        self.publish(store, wf, "a", "b", "c")
        run = self.prepared(store, wf, "b")
        store.commit_consumer_run(run.id)
        found = store.events_by_ids(wf, "in", ["c", "zzz", "b", "a", "c"])
        assert [e.message_id for e in found] == ["c", "b", "a"]
        assert [e.status for e in found] == [
            EventStatus.PENDING,
            EventStatus.CONSUMED,
            EventStatus.PENDING,
        ]
        assert store.events_by_ids(wf, "other", ["a"]) == []

    def test_unknown_event_is_not_found(self, store: Store) -> None:
        with pytest.raises(NotFound):
            store.get_event("evt_missing")

    def test_skip_event_is_audited_and_only_for_pending_events(self, store: Store) -> None:
        wf = self.deploy(store)
        self.publish(store, wf, "keep", "drop")
        drop = store.events_by_ids(wf, "in", ["drop"])[0]
        skipped = store.skip_event(drop.id, actor="alice", reason="stale")
        assert skipped.status is EventStatus.SKIPPED
        assert [e.message_id for e in store.pending_events(wf, "in", limit=10)] == ["keep"]
        log = store.audit_log(workflow=wf)
        assert [(a.actor, a.action, a.target) for a in log] == [("alice", "skip_event", drop.id)]
        with pytest.raises(EventNotPending):
            store.skip_event(drop.id, actor="alice")
        run = self.prepared(store, wf, "keep")
        assert run.phase is RunPhase.PREPARED
        held = store.events_by_ids(wf, "in", ["keep"])[0]
        with pytest.raises(EventNotPending):
            store.skip_event(held.id, actor="bob")
        assert len(store.audit_log(workflow=wf)) == 1
