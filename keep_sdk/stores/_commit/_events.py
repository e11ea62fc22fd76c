"""Commit points of events: publish (idempotent per messageId) and a person's skip."""

from __future__ import annotations

from keep_sdk.errors import EventNotPending, StoreConflict
from keep_sdk.model import Event, EventStatus
from keep_sdk.stores import _rules as rules
from keep_sdk.stores._commit._core import StoreCore
from keep_sdk.stores._commit.work import Work, require_event, require_workflow
from keep_sdk.stores._models import Publication, PublishOutcome, PublishResult
from keep_sdk.stores.faults import FaultPoint

__all__ = ["EventPoints", "publish"]


class EventPoints(StoreCore):
    """publish and skip_event."""

    def publish(
        self, workflow: str, publication: Publication, *, created_by: str | None = None
    ) -> PublishResult:
        with self._commit() as w:
            require_workflow(w.tx, workflow)
            return publish(w, workflow, publication, created_by)

    def skip_event(self, event_id: str, *, actor: str, reason: str | None = None) -> Event:
        with self._commit() as w:
            event = require_event(w.tx, event_id)
            refused = EventNotPending(
                f"event {event_id} ({event.topic}/{event.message_id}) is "
                f"{event.status.value}; only a pending event can be skipped"
            )
            if event.status is not EventStatus.PENDING:
                raise refused
            skipped = w.update_event(
                event,
                event.model_copy(update={"status": EventStatus.SKIPPED, "updated_at": w.now}),
                refused,
            )
            w.fault(FaultPoint.SKIP_EVENT)
            w.audit(
                actor=actor,
                action="skip_event",
                target=event_id,
                workflow=event.workflow,
                detail={"reason": reason},
            )
            return skipped


def publish(
    w: Work, workflow: str, publication: Publication, created_by: str | None
) -> PublishResult:
    """Create the event, replace a pending unreserved one, or leave a duplicate alone."""
    event = Event(
        id=rules.new_id("evt"),
        workflow=workflow,
        topic=publication.topic,
        message_id=publication.message_id,
        title=publication.title,
        payload=publication.payload,
        created_by=created_by,
        created_at=w.now,
        updated_at=w.now,
    )
    if w.tx.insert_event(event):
        return PublishResult(outcome=PublishOutcome.CREATED, event=event)
    found = w.tx.events_by_keys(workflow, publication.topic, [publication.message_id])
    if not found:
        raise StoreConflict(f"event {publication.message_id} vanished while published")
    existing = found[0]
    outcome = rules.publish_outcome(existing)
    if outcome is not PublishOutcome.REPLACED:
        return PublishResult(outcome=outcome, event=existing)
    replaced = w.update_event(
        existing,
        existing.model_copy(
            update={"title": publication.title, "payload": publication.payload, "updated_at": w.now}
        ),
        StoreConflict(f"event {existing.id} was reserved while being replaced; publish again"),
    )
    return PublishResult(outcome=outcome, event=replaced)
