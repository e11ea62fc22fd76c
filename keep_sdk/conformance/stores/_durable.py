"""Durable operations: invocation records, the notification inbox, poll claims, attempts.

For stores that declare ``supports_durable`` (their transactions implement
`keep_sdk.stores.DurableRows`); the built-in memory and SQL stores do.
"""

from __future__ import annotations

import datetime as dt
import uuid
from typing import Any

import pytest

from keep_sdk.conformance.stores._base import StoreTestBase
from keep_sdk.conformance.stores._support import FaultInjector, ManualClock
from keep_sdk.contract.durable import (
    AttemptKind,
    Done,
    Invocation,
    InvocationStatus,
    NotificationOutcome,
    Pending,
    derive_invocation,
)
from keep_sdk.errors import MutationConflict, NotFound, StoreConflict
from keep_sdk.model import EventStatus, LedgerStatus, MutationApplied, RunPhase, RunStatus
from keep_sdk.stores import Store, StoreCapability, SupportsDurable

__all__ = ["DurableTestBase", "DurableTests"]


class DurableTestBase(StoreTestBase):
    """The capability and helpers of the durable tests. Not collected by itself."""

    def durable(self, store: Store) -> SupportsDurable:
        """`store` as `SupportsDurable`; the test needs the ``durable`` capability."""
        self.require(StoreCapability.DURABLE, store)
        assert isinstance(store, SupportsDurable), (
            "the durable capability is declared but the store does not implement SupportsDurable"
        )
        return store

    def started(
        self, store: Store, *, timeout_at: dt.datetime | None = None
    ) -> tuple[str, Invocation]:
        """A workflow with one run at mutating whose durable intent is recorded."""
        durable = self.durable(store)
        wf = self.deploy(store)
        run = self.mutating(store, wf, "a")
        invocation_id, key = derive_invocation(wf, run.handler, run.id)
        _, invocation = durable.record_durable_intent(
            run.id,
            connector="approvals",
            operation="request",
            params={"to": "ann@example.com"},
            idempotency_key=f"{wf}:{run.id}",
            invocation_id=invocation_id,
            correlation_key=key,
            timeout_at=timeout_at,
            ui_title="Ask Ann",
        )
        return wf, invocation

    def parked(self, store: Store, **kwargs: Any) -> tuple[str, Invocation]:
        wf, invocation = self.started(store, **kwargs)
        invocation, run = self.durable(store).record_start_answer(
            invocation.id, Pending(external_id="req-1")
        )
        assert run.status is RunStatus.PAUSED_WAITING
        return wf, invocation


class DurableTests(DurableTestBase):
    """record_durable_intent, start answers, the inbox, claims, timeouts, attempts."""

    def test_the_intent_and_the_invocation_are_recorded_together(self, store: Store) -> None:
        durable = self.durable(store)
        wf, invocation = self.started(store)
        entry = store.ledger_entry_for_run(invocation.run_id)
        assert entry is not None
        assert (entry.id, entry.status) == (invocation.ledger_id, LedgerStatus.IN_FLIGHT)
        assert invocation.status is InvocationStatus.ACTIVE
        assert not invocation.started
        assert durable.get_invocation(invocation.id) == invocation
        assert durable.invocation_by_key(invocation.correlation_key) == invocation
        assert durable.invocation_for_run(invocation.run_id) == invocation
        assert durable.list_invocations(workflow=wf) == [invocation]
        with pytest.raises(MutationConflict):
            durable.record_durable_intent(
                invocation.run_id,
                connector="approvals",
                operation="request",
                params={},
                idempotency_key="k",
                invocation_id=invocation.id,
                correlation_key=invocation.correlation_key,
                timeout_at=None,
            )
        assert durable.list_invocations(workflow=wf) == [invocation]

    def test_a_failed_intent_leaves_neither_ledger_nor_invocation(
        self, store: Store, faults: FaultInjector
    ) -> None:
        durable = self.durable(store)
        wf = self.deploy(store)
        run = self.mutating(store, wf, "a")
        invocation_id, key = derive_invocation(wf, run.handler, run.id)

        def intent() -> object:
            return durable.record_durable_intent(
                run.id,
                connector="approvals",
                operation="request",
                params={},
                idempotency_key="k",
                invocation_id=invocation_id,
                correlation_key=key,
                timeout_at=None,
            )

        self.assert_all_or_nothing(store, faults, [wf], intent)
        assert durable.invocation_for_run(run.id) is not None

    def test_pending_parks_the_run_keeping_its_reservations(self, store: Store) -> None:
        durable = self.durable(store)
        wf, invocation = self.parked(store)
        run = store.get_run(invocation.run_id)
        assert (run.status, run.phase) == (RunStatus.PAUSED_WAITING, RunPhase.MUTATING)
        assert [e.status for e in store.list_events(wf)] == [EventStatus.RESERVED]
        stored = durable.get_invocation(invocation.id)
        assert (stored.started, stored.external_id) == (True, "req-1")
        assert [(a.kind, a.outcome) for a in durable.list_attempts(invocation.id)] == [
            (AttemptKind.START, "pending")
        ]
        assert [r for r in store.active_runs() if r.workflow == wf] == []

    def test_an_unknown_key_is_refused_and_nothing_is_recorded(self, store: Store) -> None:
        durable = self.durable(store)
        _, invocation = self.parked(store)
        with pytest.raises(NotFound):
            durable.receive_notification("kc-" + "9" * 40, {}, source="test")
        assert durable.list_notifications(invocation.id) == []

    def test_a_notification_before_the_park_waits_and_then_applies_once(self, store: Store) -> None:
        durable = self.durable(store)
        wf, invocation = self.started(store)
        early = durable.receive_notification(invocation.correlation_key, {"ok": 1}, source="t")
        assert early.outcome is NotificationOutcome.PENDING
        assert early.id not in {n.id for n in durable.deliverable_notifications(limit=1000)}
        with pytest.raises(StoreConflict):
            durable.apply_notification(early.id)
        durable.record_start_answer(invocation.id, Pending())
        mine = [n.id for n in durable.deliverable_notifications(limit=1000) if n.workflow == wf]
        assert mine == [early.id]
        second = durable.receive_notification(invocation.correlation_key, {"ok": 2}, source="t")
        applied, run = durable.apply_notification(early.id)
        assert applied.outcome is NotificationOutcome.APPLIED
        assert (run.status, run.phase) == (RunStatus.ACTIVE, RunPhase.MUTATED)
        assert run.mutation_result == MutationApplied(result={"ok": 1})
        entry = store.ledger_entry_for_run(run.id)
        assert entry is not None
        assert (entry.status, entry.result) == (LedgerStatus.APPLIED, {"ok": 1})
        outcomes = {n.id: n.outcome for n in durable.list_notifications(invocation.id)}
        assert outcomes == {
            early.id: NotificationOutcome.APPLIED,
            second.id: NotificationOutcome.DUPLICATE,
        }
        with pytest.raises(StoreConflict):
            durable.apply_notification(second.id)
        late = durable.receive_notification(invocation.correlation_key, {"ok": 3}, source="t")
        assert late.outcome is NotificationOutcome.DUPLICATE
        assert durable.get_invocation(invocation.id).status is InvocationStatus.COMPLETED
        assert store.get_run(run.id).mutation_result == MutationApplied(result={"ok": 1})

    def test_applying_is_all_or_nothing(self, store: Store, faults: FaultInjector) -> None:
        durable = self.durable(store)
        wf, invocation = self.parked(store)
        note = durable.receive_notification(invocation.correlation_key, {"ok": 1}, source="t")
        self.assert_all_or_nothing(store, faults, [wf], lambda: durable.apply_notification(note.id))
        assert durable.get_invocation(invocation.id).status is InvocationStatus.COMPLETED

    def test_claims_are_compare_and_swap_and_a_stale_claim_integrates_nothing(
        self, store: Store, clock: ManualClock
    ) -> None:
        durable = self.durable(store)
        _, invocation = self.started(store)
        durable.record_start_answer(invocation.id, Pending(token="t1"), next_poll_at=clock())
        assert invocation.id in {i.id for i in durable.due_polls(clock(), limit=1000)}
        first = durable.claim_invocation(
            invocation.id, "w1", until=clock() + dt.timedelta(seconds=30)
        )
        assert first is not None
        assert durable.claim_invocation(invocation.id, "w2", until=clock()) is None
        clock.advance(31)
        second = durable.claim_invocation(
            invocation.id, "w2", until=clock() + dt.timedelta(seconds=30)
        )
        assert second is not None
        assert second.claim_version == first.claim_version + 1
        done = Done(ok=True, result={"r": 1})
        with pytest.raises(StoreConflict):
            durable.record_start_answer(
                invocation.id, done, kind=AttemptKind.POLL, claim_version=first.claim_version
            )
        durable.record_start_answer(
            invocation.id, done, kind=AttemptKind.POLL, claim_version=second.claim_version
        )
        with pytest.raises(StoreConflict):
            durable.record_start_answer(
                invocation.id, done, kind=AttemptKind.POLL, claim_version=second.claim_version
            )
        outcomes = [a.outcome for a in durable.list_attempts(invocation.id)]
        assert outcomes == ["pending", "done"]
        assert invocation.id not in {i.id for i in durable.due_polls(clock(), limit=1000)}

    def test_contention_on_one_invocation_does_not_block_another(
        self, store: Store, clock: ManualClock
    ) -> None:
        durable = self.durable(store)
        _, one = self.started(store)
        _, two = self.started(store)
        until = clock() + dt.timedelta(seconds=30)
        assert durable.claim_invocation(one.id, "w1", until=until) is not None
        assert durable.claim_invocation(one.id, "w2", until=until) is None
        assert durable.claim_invocation(two.id, "w2", until=until) is not None

    def test_the_timeout_scan_finds_only_what_is_due(
        self, store: Store, clock: ManualClock
    ) -> None:
        durable = self.durable(store)
        _, soon = self.parked(store, timeout_at=clock() + dt.timedelta(hours=1))
        _, later = self.parked(store, timeout_at=clock() + dt.timedelta(days=3))
        mine = {soon.id, later.id}

        def expired() -> list[str]:
            found = durable.expired_invocations(clock(), limit=1000)
            return [i.id for i in found if i.id in mine]

        assert expired() == []
        assert durable.time_out_invocation(soon.id) is None
        clock.advance(2 * 3600)
        assert expired() == [soon.id]
        timed_out = durable.time_out_invocation(soon.id)
        assert timed_out is not None
        invocation, run = timed_out
        assert invocation.status is InvocationStatus.TIMED_OUT
        assert run.status is RunStatus.PAUSED_TIMEOUT
        assert expired() == []
        assert durable.get_invocation(later.id).status is InvocationStatus.ACTIVE
        late = durable.receive_notification(soon.correlation_key, {}, source="t")
        assert late.outcome is NotificationOutcome.IGNORED

    def test_a_person_cancels_and_it_is_audited(self, store: Store) -> None:
        durable = self.durable(store)
        wf, invocation = self.parked(store)
        pending = durable.receive_notification(invocation.correlation_key, {}, source="t")
        who = f"person-{uuid.uuid4().hex[:6]}"
        ended, run = durable.resolve_invocation(invocation.id, "cancel", actor=who, detail="no")
        assert ended.status is InvocationStatus.CANCELLED
        assert (run.status, run.phase) == (RunStatus.ACTIVE, RunPhase.EMITTING)
        assert run.mutation_result is not None
        assert run.mutation_result.status == "skipped"
        [note] = durable.list_notifications(invocation.id)
        assert (note.id, note.outcome) == (pending.id, NotificationOutcome.IGNORED)
        assert [a.actor for a in store.audit_log(workflow=wf)][-1] == who
        with pytest.raises(MutationConflict):
            durable.resolve_invocation(invocation.id, "cancel", actor=who)
