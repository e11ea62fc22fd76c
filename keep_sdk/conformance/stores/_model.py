"""A reference model of events, runs and ledger entries, driven by random operations.

`Scenario` applies a random sequence of operations (publish, consume, mutate, skip,
fail) to a store and to plain dicts at once; the property clauses compare what the
store answers with what the dicts say it must. The sequences come from a seeded
`random.Random`, so a failing seed replays the same operations.
"""

from __future__ import annotations

import random
import uuid
from collections import Counter
from dataclasses import dataclass, field

from keep_sdk.conformance.stores._support import CONSUMER, STANDARD_HANDLERS
from keep_sdk.model import (
    EventStatus,
    HandlerKind,
    LedgerStatus,
    PrepareResult,
    Reservation,
    RunPhase,
    RunStatus,
)
from keep_sdk.stores import Publication, Store

__all__ = ["ModelEvent", "ModelRow", "Scenario"]


@dataclass
class ModelEvent:
    """What the model knows of one event."""

    message_id: str
    topic: str
    status: EventStatus = EventStatus.PENDING
    created_by: str | None = None


@dataclass
class ModelRow:
    """A run or a ledger entry: its id, workflow and status."""

    id: str
    workflow: str
    status: str


@dataclass
class Scenario:
    """A store, the workflows it acts on, and the model of what they hold."""

    store: Store
    rng: random.Random
    workflows: list[str] = field(default_factory=list)
    events: dict[str, list[ModelEvent]] = field(default_factory=dict)
    runs: list[ModelRow] = field(default_factory=list)
    ledger: list[ModelRow] = field(default_factory=list)
    _n: int = 0

    def deploy(self, count: int) -> list[str]:
        """Deploy `count` workflows under fresh names with the standard handlers."""
        for _ in range(count):
            name = f"wf-{uuid.uuid4().hex[:12]}"
            self.store.deploy(name, "export default 1", {}, handlers=STANDARD_HANDLERS)
            self.workflows.append(name)
            self.events[name] = []
        return self.workflows

    def fresh_id(self) -> str:
        self._n += 1
        return f"m{self._n}"

    def publish(self, workflow: str, topic: str | None = None) -> ModelEvent:
        topic = topic or self.rng.choice(["in", "other"])
        event = ModelEvent(self.fresh_id(), topic)
        self.store.publish(
            workflow, Publication(topic=topic, message_id=event.message_id, title=event.message_id)
        )
        self.events[workflow].append(event)
        return event

    def pending(self, workflow: str) -> list[ModelEvent]:
        return [e for e in self.events[workflow] if e.status is EventStatus.PENDING]

    def _reserve(self, workflow: str) -> tuple[str, list[ModelEvent]]:
        """Begin a consumer run reserving up to two random pending events; the run's id."""
        pending = self.pending(workflow)
        chosen = self.rng.sample(pending, min(len(pending), self.rng.randint(0, 2)))
        run = self.store.begin_run(workflow, CONSUMER, HandlerKind.CONSUMER)
        by_topic: dict[str, list[str]] = {}
        for event in chosen:
            by_topic.setdefault(event.topic, []).append(event.message_id)
        reservations = [Reservation(topic=t, ids=ids) for t, ids in by_topic.items()]
        self.store.save_prepare_result(run.id, PrepareResult(reservations=reservations))
        for event in chosen:
            event.status = EventStatus.RESERVED
        self.runs.append(ModelRow(run.id, workflow, RunStatus.ACTIVE.value))
        return run.id, chosen

    def _finish(self, run_id: str, status: RunStatus) -> None:
        for row in self.runs:
            if row.id == run_id:
                row.status = status.value

    def consume(self, workflow: str) -> None:
        """A consumer run reserves events and commits, publishing children on one topic."""
        run_id, chosen = self._reserve(workflow)
        children = [ModelEvent(self.fresh_id(), "out", created_by=run_id) for _ in chosen]
        self.store.commit_consumer_run(
            run_id,
            publishes=[
                Publication(topic="out", message_id=c.message_id, title=c.message_id)
                for c in children
            ],
        )
        for event in chosen:
            event.status = EventStatus.CONSUMED
        self.events[workflow].extend(children)
        self._finish(run_id, RunStatus.COMMITTED)

    def fail(self, workflow: str) -> None:
        """A consumer run reserves events, then fails and releases them."""
        run_id, chosen = self._reserve(workflow)
        self.store.set_run_status(
            run_id, RunStatus.FAILED_LOGIC, error="boom", release_reservations=True
        )
        for event in chosen:
            event.status = EventStatus.PENDING
        self._finish(run_id, RunStatus.FAILED_LOGIC)

    def mutate(self, workflow: str) -> None:
        """A consumer run records a mutation that applies (and commits) or fails."""
        run_id, chosen = self._reserve(workflow)
        self.store.advance_phase(run_id, RunPhase.MUTATING)
        entry = self.store.record_mutation_intent(
            run_id,
            connector="sheets",
            operation="appendRow",
            params={"n": len(chosen)},
            idempotency_key=f"{workflow}:{run_id}",
        )
        row = ModelRow(entry.id, workflow, LedgerStatus.IN_FLIGHT.value)
        self.ledger.append(row)
        if self.rng.random() < 0.6:
            self.store.record_mutation_applied(entry.id, {"ok": True})
            self.store.commit_consumer_run(run_id)
            row.status = LedgerStatus.APPLIED.value
            for event in chosen:
                event.status = EventStatus.CONSUMED
            self._finish(run_id, RunStatus.COMMITTED)
        else:
            self.store.record_mutation_failed(entry.id, error="refused")
            self.store.set_run_status(run_id, RunStatus.FAILED_LOGIC, error="refused")
            row.status = LedgerStatus.FAILED.value
            self._finish(run_id, RunStatus.FAILED_LOGIC)

    def skip(self, workflow: str) -> None:
        pending = self.pending(workflow)
        if not pending:
            self.publish(workflow)
            return
        event = self.rng.choice(pending)
        found = self.store.events_by_ids(workflow, event.topic, [event.message_id])
        self.store.skip_event(found[0].id, actor="tester")
        event.status = EventStatus.SKIPPED

    def step(self) -> str:
        """One random operation on a random workflow; its name."""
        workflow = self.rng.choice(self.workflows)
        action = self.rng.choices(
            ["publish", "consume", "fail", "mutate", "skip"], weights=[5, 2, 1, 1, 1]
        )[0]
        getattr(self, action)(workflow)
        return f"{action} {workflow}"

    def event_counts(self, workflow: str) -> dict[str, int]:
        return dict(Counter(e.status.value for e in self.events[workflow]))

    def run_counts(self, workflow: str) -> dict[str, int]:
        return dict(Counter(r.status for r in self.runs if r.workflow == workflow))
