"""The mutation ledger: one entry per run, durable before the call, settled exactly once."""

from __future__ import annotations

import datetime as dt
import json
import signal
from collections.abc import Callable

import pytest

from keep_sdk.conformance.stores._base import StoreTestBase
from keep_sdk.conformance.stores._support import ManualClock
from keep_sdk.errors import MutationConflict, NotFound, PhaseConflict, RunNotActive
from keep_sdk.model import (
    LedgerStatus,
    MutationApplied,
    MutationSkipped,
    RunPhase,
    RunStatus,
)
from keep_sdk.stores import Resolution, Store

__all__ = ["LedgerTests"]


class LedgerTests(StoreTestBase):
    """record_mutation_intent and every way a ledger entry is settled."""

    def test_an_intent_is_recorded_in_flight_once_per_run(self, store: Store) -> None:
        wf = self.deploy(store)
        run = self.mutating(store, wf, "a")
        entry = self.intent(store, run)
        assert (entry.run_id, entry.workflow, entry.status) == (run.id, wf, LedgerStatus.IN_FLIGHT)
        assert (entry.connector, entry.operation, entry.params) == (
            "sheets",
            "appendRow",
            {"values": ["a", 1]},
        )
        assert entry.ui_title == "Add row for alice"
        assert store.get_ledger_entry(entry.id) == entry
        assert store.ledger_entry_for_run(run.id) == entry
        with pytest.raises(MutationConflict):
            self.intent(store, run)
        assert store.list_ledger(workflow=wf) == [entry]

    def test_settling_an_unknown_entry_is_not_found_and_changes_nothing(
        self, store: Store, clock: ManualClock
    ) -> None:
        wf = self.deploy(store)
        run = self.mutating(store, wf, "a")
        entry = self.intent(store, run)
        unknown = f"{entry.id}-unknown"
        settles: list[Callable[[], object]] = [
            lambda: store.record_mutation_applied(unknown, {"ok": True}),
            lambda: store.record_mutation_failed(unknown, error="refused"),
            lambda: store.record_needs_reconcile(unknown, next_reconcile_at=clock()),
            lambda: store.record_mutation_indeterminate(unknown, error="gave up"),
            lambda: store.resolve_mutation(unknown, Resolution.HAPPENED, actor="alice"),
        ]
        for settle in settles:
            with pytest.raises(NotFound, match=unknown):
                settle()
        with pytest.raises(NotFound, match=unknown):
            store.get_ledger_entry(unknown)
        assert store.get_ledger_entry(entry.id) == entry
        assert store.get_run(run.id) == run
        assert store.list_ledger(workflow=wf) == [entry]

    def test_an_intent_needs_an_active_run_at_prepared_or_mutating(self, store: Store) -> None:
        wf = self.deploy(store)
        fresh = self.begin_consumer(store, wf)
        with pytest.raises(PhaseConflict):
            self.intent(store, fresh)
        store.set_run_status(fresh.id, RunStatus.CRASHED, release_reservations=True)
        run = self.mutating(store, wf, "a")
        store.set_run_status(run.id, RunStatus.PAUSED_APPROVAL)
        with pytest.raises(RunNotActive):
            self.intent(store, run)
        assert store.ledger_entry_for_run(fresh.id) is None
        assert store.ledger_entry_for_run(run.id) is None

    def test_an_intent_at_prepared_moves_the_run_to_mutating_with_it(self, store: Store) -> None:
        wf = self.deploy(store)
        run = self.prepared(store, wf, "a")
        entry = self.intent(store, run)
        after = store.get_run(run.id)
        assert (after.phase, after.status) == (RunPhase.MUTATING, RunStatus.ACTIVE)
        assert store.ledger_entry_for_run(run.id) == entry
        with pytest.raises(MutationConflict):
            self.intent(store, after)

    def test_applied_moves_the_run_to_mutated_with_the_result(self, store: Store) -> None:
        wf = self.deploy(store)
        run = self.mutating(store, wf, "a")
        entry = store.record_mutation_applied(self.intent(store, run).id, {"rowId": 12})
        assert (entry.status, entry.result) == (LedgerStatus.APPLIED, {"rowId": 12})
        after = store.get_run(run.id)
        assert (after.phase, after.mutation_result) == (
            RunPhase.MUTATED,
            MutationApplied(result={"rowId": 12}),
        )
        with pytest.raises(MutationConflict):
            store.record_mutation_applied(entry.id, {"rowId": 13})
        with pytest.raises(MutationConflict):
            store.record_mutation_failed(entry.id, error="x")
        with pytest.raises(MutationConflict):
            store.record_mutation_indeterminate(entry.id)
        assert store.get_ledger_entry(entry.id) == entry

    def test_failed_keeps_the_run_at_mutating(self, store: Store) -> None:
        wf = self.deploy(store)
        run = self.mutating(store, wf, "a")
        entry = store.record_mutation_failed(self.intent(store, run).id, error="403 refused")
        assert (entry.status, entry.error) == (LedgerStatus.FAILED, "403 refused")
        assert store.get_run(run.id).phase is RunPhase.MUTATING
        assert store.get_run(run.id).mutation_result is None

    def test_reconciliation_counts_attempts_and_comes_due(
        self, store: Store, clock: ManualClock
    ) -> None:
        wf = self.deploy(store)
        run = self.mutating(store, wf, "a")
        entry = self.intent(store, run)
        first_due = clock() + dt.timedelta(seconds=10)
        entry = store.record_needs_reconcile(entry.id, next_reconcile_at=first_due, error="timeout")
        assert (entry.status, entry.reconcile_attempts, entry.next_reconcile_at) == (
            LedgerStatus.NEEDS_RECONCILE,
            0,
            first_due,
        )

        def due() -> list[str]:
            return [e.id for e in store.due_reconciliations() if e.workflow == wf]

        assert due() == []
        clock.advance(10)
        assert due() == [entry.id]
        assert [
            e.id
            for e in store.due_reconciliations(clock() - dt.timedelta(seconds=1))
            if e.workflow == wf
        ] == []
        entry = store.record_needs_reconcile(
            entry.id, next_reconcile_at=clock() + dt.timedelta(seconds=20)
        )
        assert entry.reconcile_attempts == 1
        assert store.get_ledger_entry(entry.id) == entry
        assert store.list_ledger(workflow=wf, status=LedgerStatus.NEEDS_RECONCILE) == [entry]
        assert due() == []
        entry = store.record_mutation_indeterminate(entry.id, error="gave up")
        assert entry.status is LedgerStatus.INDETERMINATE
        clock.advance(60)
        assert due() == []
        assert store.list_ledger(workflow=wf, status=LedgerStatus.INDETERMINATE) == [entry]

    def test_reconciliation_may_find_the_mutation_applied(self, store: Store) -> None:
        wf = self.deploy(store)
        run = self.mutating(store, wf, "a")
        entry = self.intent(store, run)
        store.record_needs_reconcile(entry.id, next_reconcile_at=dt.datetime.now(dt.UTC))
        store.set_run_status(run.id, RunStatus.PAUSED_RECONCILIATION)
        applied = store.record_mutation_applied(entry.id, {"found": True})
        assert applied.status is LedgerStatus.APPLIED
        assert store.get_run(run.id).phase is RunPhase.MUTATED

    def test_a_person_resolves_an_indeterminate_mutation(self, store: Store) -> None:
        wf = self.deploy(store)
        outcomes = {}
        for resolution in Resolution:
            run = self.mutating(store, wf, f"m-{resolution.value}")
            entry = self.intent(store, run)
            with pytest.raises(MutationConflict):
                store.resolve_mutation(entry.id, resolution, actor="alice")
            store.record_mutation_indeterminate(entry.id, error="timeout")
            store.set_run_status(run.id, RunStatus.PAUSED_RECONCILIATION)
            resolved = store.resolve_mutation(entry.id, resolution, actor="alice", detail="why")
            assert (resolved.resolved_by, resolved.resolved_at is not None) == ("alice", True)
            with pytest.raises(MutationConflict):
                store.resolve_mutation(entry.id, resolution, actor="bob")
            after = store.get_run(run.id)
            outcomes[resolution] = (resolved.status, after.phase, after.mutation_result)
            store.set_run_status(run.id, RunStatus.FAILED_INTERNAL)
        assert outcomes == {
            Resolution.HAPPENED: (
                LedgerStatus.APPLIED,
                RunPhase.MUTATED,
                MutationApplied(result=None),
            ),
            Resolution.DIDNT_HAPPEN: (LedgerStatus.FAILED, RunPhase.MUTATING, None),
            Resolution.SKIP: (LedgerStatus.INDETERMINATE, RunPhase.EMITTING, MutationSkipped()),
        }
        actions = [(a.actor, a.action) for a in store.audit_log(workflow=wf)]
        assert actions == [
            ("alice", "resolve_mutation:happened"),
            ("alice", "resolve_mutation:didnt_happen"),
            ("alice", "resolve_mutation:skip"),
        ]

    def test_the_entry_of_a_committed_run_never_changes(self, store: Store) -> None:
        wf = self.deploy(store)
        run = self.mutating(store, wf, "a")
        entry = self.intent(store, run)
        store.record_mutation_indeterminate(entry.id)
        store.resolve_mutation(entry.id, Resolution.SKIP, actor="alice")
        store.commit_consumer_run(run.id)
        with pytest.raises(MutationConflict):
            store.resolve_mutation(entry.id, Resolution.HAPPENED, actor="bob")

    def test_an_intent_survives_a_reopen(self, store: Store, reopen: Callable[[], Store]) -> None:
        wf = self.deploy(store)
        run = self.mutating(store, wf, "a")
        entry = self.intent(store, run)
        again = reopen()
        assert again.ledger_entry_for_run(run.id) == entry
        assert again.get_run(run.id) == store.get_run(run.id)
        assert again.list_events(wf) == store.list_events(wf)

    def test_an_intent_survives_sigkill_of_the_process_that_wrote_it(
        self, store: Store, store_url: str | None, reopen: Callable[[], Store]
    ) -> None:
        url = self.require_processes(store_url)
        wf = self.deploy(store)
        run = self.mutating(store, wf, "a")
        child = self.spawn(url, "hold-intent", run.id)
        try:
            assert child.stdout is not None
            line = child.stdout.readline()
            assert line, f"child wrote nothing: {child.stderr.read() if child.stderr else ''}"
            written = json.loads(line)
        finally:
            child.send_signal(signal.SIGKILL)
            child.communicate(timeout=60)
        assert child.returncode == -signal.SIGKILL
        entry = reopen().ledger_entry_for_run(run.id)
        assert entry is not None, "the ledger entry written before SIGKILL was lost"
        assert (entry.id, entry.status) == (written["id"], LedgerStatus.IN_FLIGHT)
        assert entry.idempotency_key == f"key:{run.id}"
