"""Random sequences of publishes, runs, faults, crashes and a person's actions.

Invariants checked after every step:
- no mutation is applied twice in one run chain (one effect per idempotency key);
- every event is consumed or skipped, pending, or reserved by a run that is
  visibly waiting (paused) or failed with its inputs pinned, never by a run
  that is gone;
- the consumer's state changes only on commit (its counter equals the number of
  committed runs);
- at most one run is active, and only while a step is in progress (never after).
"""

from __future__ import annotations

import os
from typing import Any

import hypothesis.strategies as st
from hypothesis import HealthCheck, settings
from hypothesis.stateful import RuleBasedStateMachine, invariant, rule

from keep_sdk.connectors.builtin import FaultKind
from keep_sdk.errors import ActionRefused, KeepError
from keep_sdk.model import EventStatus, LedgerStatus, RunStatus
from tests.runtime.harness import Env, fast_policy, make_env


class SimulatedCrash(BaseException):
    """The host 'dies' right after a commit point; nothing after it runs."""


class CrashAfter:
    """A store proxy that raises `SimulatedCrash` after `method` returns, once."""

    def __init__(self, store: Any, method: str) -> None:
        self._store = store
        self._method: str | None = method

    def __getattr__(self, name: str) -> Any:
        attribute = getattr(self._store, name)
        if name != self._method:
            return attribute

        def wrapped(*args: Any, **kwargs: Any) -> Any:
            attribute(*args, **kwargs)
            self._method = None
            raise SimulatedCrash(name)

        return wrapped


FAULTS = [
    FaultKind.TRANSIENT,
    FaultKind.PERMISSION_DENIED,
    FaultKind.FAILURE,
    FaultKind.TIMEOUT_BEFORE_EFFECT,
    FaultKind.TIMEOUT_AFTER_EFFECT,
]
CRASH_POINTS = [
    "save_prepare_result",
    "record_mutation_intent",
    "record_mutation_applied",
    "commit_consumer_run",
]
FINISHED = (RunStatus.COMMITTED, RunStatus.CRASHED)


class RuntimeMachine(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.env: Env = make_env("memory://", policy=fast_policy(reconcile_attempts=2))
        self.real_store = self.env.store
        self.published = 0

    def teardown(self) -> None:
        self.real_store.close()

    @rule()
    def publish(self) -> None:
        self.published += 1
        self.env.publish(f"m{self.published}")

    @rule(kind=st.sampled_from(FAULTS))
    def fault(self, kind: FaultKind) -> None:
        self.env.sheets.faults.inject(kind, operation="appendRow")

    @rule()
    def reconcile_cannot_tell(self) -> None:
        self.env.sheets.faults.inject(FaultKind.TRANSIENT, operation="reconcile:appendRow")

    @rule()
    def run_consumer(self) -> None:
        if self.real_store.active_runs() or self._blocked():
            return
        self.env.runtime.run_consumer("mail-to-sheet", "appendRow")

    @rule(point=st.sampled_from(CRASH_POINTS))
    def crash_during_a_run(self, point: str) -> None:
        if self.real_store.active_runs() or self._blocked():
            return
        self.env.runtime.store = CrashAfter(self.real_store, point)
        try:
            self.env.runtime.run_consumer("mail-to-sheet", "appendRow")
        except SimulatedCrash:
            pass
        finally:
            self.env.runtime.store = self.real_store
        self.env.runtime.recover()

    @rule()
    def time_passes_and_the_loops_run(self) -> None:
        self.env.clock.advance(120)
        for entry in self.real_store.due_reconciliations(self.env.clock()):
            self.env.runtime.reconcile(entry.id)
        for run in self.real_store.list_runs(status=RunStatus.PAUSED_TRANSIENT):
            if run.resume_at is None or run.resume_at <= self.env.clock():
                self.env.runtime.resume(run.id)
        for run in self.real_store.list_runs(status=RunStatus.PAUSED_APPROVAL):
            self.env.runtime.resume(run.id)

    @rule(choice=st.sampled_from(["try_again", "truth", "skip"]))
    def a_person_resolves(self, choice: str) -> None:
        for run in self.real_store.list_runs(status=RunStatus.PAUSED_RECONCILIATION):
            entry = self.real_store.ledger_entry_for_run(run.id)
            if entry is None or entry.status is not LedgerStatus.INDETERMINATE:
                continue
            actions = self.env.actions
            try:
                if choice == "try_again":
                    actions.try_again(run.id, actor="p")
                elif choice == "skip":
                    actions.skip(run.id, actor="p")
                elif self._happened(entry.idempotency_key):
                    actions.try_again(run.id, actor="p")
                else:
                    actions.didnt_happen(run.id, actor="p")
            except ActionRefused:
                pass
            except KeepError:
                pass

    @rule()
    def retry_failed_runs(self) -> None:
        for status in (RunStatus.FAILED_LOGIC, RunStatus.FAILED_INTERNAL):
            for run in self.real_store.list_runs(status=status):
                pinned = [
                    e
                    for e in self.real_store.list_events("mail-to-sheet")
                    if e.reserved_by == run.id
                ]
                if pinned and not self.real_store.active_runs():
                    self.env.runtime.retry(run.id)

    def _blocked(self) -> bool:
        return any(
            self.real_store.list_runs(status=s)
            for s in (
                RunStatus.PAUSED_TRANSIENT,
                RunStatus.PAUSED_APPROVAL,
                RunStatus.PAUSED_RECONCILIATION,
            )
        )

    def _happened(self, key: str) -> bool:
        return any(e["idempotencyKey"] == key for e in self.env.sheets.effects())

    @invariant()
    def no_mutation_applied_twice_in_a_run_chain(self) -> None:
        keys = [e["idempotencyKey"] for e in self.env.sheets.effects()]
        assert len(keys) == len(set(keys)), keys

    @invariant()
    def every_event_is_settled_or_visibly_held(self) -> None:
        for event in self.real_store.list_events("mail-to-sheet", topic="email.received"):
            if event.status is EventStatus.PENDING:
                assert event.reserved_by is None
                continue
            if event.reserved_by is None:
                assert event.status is EventStatus.SKIPPED
                continue
            holder = self.real_store.get_run(event.reserved_by)
            if event.status is EventStatus.RESERVED:
                assert holder.status not in FINISHED, (event, holder)
            else:
                assert holder.status is RunStatus.COMMITTED, (event, holder)

    @invariant()
    def state_changes_only_on_commit(self) -> None:
        committed = [
            r
            for r in self.real_store.list_runs(workflow="mail-to-sheet")
            if r.handler == "appendRow" and r.status is RunStatus.COMMITTED
        ]
        handler = self.real_store.get_handler("mail-to-sheet", "appendRow")
        count = handler.state["count"] if handler.has_state else 0  # type: ignore[index,call-overload]
        assert count == len(committed)

    @invariant()
    def nothing_is_left_active(self) -> None:
        assert self.real_store.active_runs() == []


TestRuntimeMachine = RuntimeMachine.TestCase
TestRuntimeMachine.settings = settings(
    max_examples=int(os.environ.get("KEEP_STATEFUL_EXAMPLES", "60")),
    stateful_step_count=25,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
