"""Merged checkpoints (`SupportsFewerCheckpoints`): a consumer run's begin, prepare result
and intent in one transaction, its applied mutation and commit in another.

The runtime takes them whenever a store has them, so they are certified whenever a
store has them. Each writes what the checkpoints it merges write (compared on twin
workflows, one driven each way), is refused as they are, and writes nothing when
refused or failed part way.
"""

from __future__ import annotations

import functools
import uuid
from typing import Any

import pytest

from keep_sdk.conformance.stores._base import StoreTestBase
from keep_sdk.conformance.stores._support import CONSUMER, FaultInjector, snapshot
from keep_sdk.errors import (
    ActiveRunExists,
    EventNotPending,
    KeepError,
    MutationConflict,
    NotFound,
    StoreConflict,
    WorkflowPaused,
)
from keep_sdk.model import (
    EventStatus,
    LedgerStatus,
    MutationApplied,
    PrepareResult,
    Reservation,
    RunPhase,
    RunRecord,
    RunStatus,
)
from keep_sdk.stores import (
    MutationIntent,
    Publication,
    PublishOutcome,
    Store,
    SupportsFewerCheckpoints,
)

__all__ = ["MergedCheckpointTests"]


def _intent(workflow: str) -> MutationIntent:
    """The mutation of a run of `workflow`, with a key no other workflow's run uses."""
    return MutationIntent(
        connector="sheets",
        operation="appendRow",
        params={"values": ["a", 1]},
        idempotency_key=f"{workflow}:merged",
        ui_title="Add row for alice",
    )


_RESERVED = PrepareResult(reservations=[Reservation(topic="in", ids=["a", "b"])], data={"n": 2})
_SHAPES = ("no prepare result", "prepared", "emitting", "with intent")
_REFUSALS = ("another active run", "paused workflow", "unknown handler", "events taken")


def _run_facts(run: RunRecord) -> dict[str, Any]:
    return run.model_dump(exclude={"id", "workflow"})


def _event_facts(store: Store, workflow: str, run_id: str) -> list[tuple[Any, ...]]:
    return [
        (e.topic, e.message_id, e.status, e.reserved_by == run_id, e.attempt, e.updated_at)
        for e in store.list_events(workflow)
    ]


def _ledger_facts(store: Store, workflow: str) -> list[dict[str, Any]]:
    return [
        e.model_dump(exclude={"id", "run_id", "workflow", "idempotency_key"})
        for e in store.list_ledger(workflow=workflow)
    ]


def _new_run_id() -> str:
    return f"run-{uuid.uuid4().hex}"


class MergedCheckpointTests(StoreTestBase):
    """begin_consumer_run, record_mutation_applied_run and commit_applied_consumer_run."""

    def merged(self, store: Store) -> SupportsFewerCheckpoints:
        """`store` as `SupportsFewerCheckpoints`; skips a store that takes five checkpoints."""
        if not isinstance(store, SupportsFewerCheckpoints):
            pytest.skip(
                f"{type(store).__name__} does not implement SupportsFewerCheckpoints: the "
                "runtime takes the five checkpoints of Store with it"
            )
        return store

    def _apart(self, store: Store, workflow: str, shape: str) -> RunRecord:
        """The run `shape` names, written by the separate checkpoints."""
        run = self.begin_consumer(store, workflow)
        if shape == "no prepare result":
            return run
        run = store.save_prepare_result(run.id, _RESERVED)
        if shape == "emitting":
            run = store.advance_phase(run.id, RunPhase.EMITTING)
        if shape == "with intent":
            run = store.advance_phase(run.id, RunPhase.MUTATING)
            store.record_mutation_intent(run.id, **_intent(workflow).model_dump())
        return store.get_run(run.id)

    def _together(
        self, store: Store, workflow: str, shape: str, run_id: str, handler: str = CONSUMER
    ) -> Any:
        """The run `shape` names, written by the merged begin."""
        return self.merged(store).begin_consumer_run(
            workflow,
            handler,
            run_id=run_id,
            prepare_result=None if shape == "no prepare result" else _RESERVED,
            phase=RunPhase.EMITTING if shape == "emitting" else RunPhase.PREPARED,
            intent=_intent(workflow) if shape == "with intent" else None,
            input_state={"n": 1},
        )

    @pytest.mark.parametrize("shape", _SHAPES)
    def test_a_merged_begin_writes_what_the_checkpoints_it_merges_write(
        self, store: Store, shape: str
    ) -> None:
        self.merged(store)
        apart, together = self.deploy(store), self.deploy(store)
        for wf in (apart, together):
            self.publish(store, wf, "a", "b", "c")
        separate = self._apart(store, apart, shape)
        run_id = _new_run_id()
        begun = self._together(store, together, shape, run_id)
        assert begun.run.id == run_id
        assert store.get_run(run_id) == begun.run
        assert _run_facts(begun.run) == _run_facts(separate)
        assert _event_facts(store, together, run_id) == _event_facts(store, apart, separate.id)
        assert _ledger_facts(store, together) == _ledger_facts(store, apart)
        assert begun.entry == store.ledger_entry_for_run(run_id)
        if shape == "with intent":
            assert begun.entry is not None
            assert (begun.entry.status, begun.entry.idempotency_key) == (
                LedgerStatus.IN_FLIGHT,
                f"{together}:merged",
            )
        assert [r.id for r in store.active_runs() if r.workflow == together] == [run_id]

    @pytest.mark.parametrize(
        ("cause", "shape"),
        [
            (cause, shape)
            for cause in _REFUSALS
            for shape in _SHAPES
            if (cause, shape) != ("events taken", "no prepare result")
        ],
    )
    def test_a_merged_begin_is_refused_as_its_parts_are_and_writes_nothing(
        self, store: Store, shape: str, cause: str
    ) -> None:
        self.merged(store)
        wf = self.deploy(store)
        self.publish(store, wf, "a", "b", "c")
        handler: str = CONSUMER
        expected: type[KeepError]
        named: tuple[str, ...] = ()
        if cause == "another active run":
            named = (wf, self.begin_producer(store, wf).id)
            expected = ActiveRunExists
        elif cause == "paused workflow":
            store.pause_workflow(wf, actor="alice", reason="holiday")
            expected = WorkflowPaused
        elif cause == "unknown handler":
            handler, expected = "no-such-handler", NotFound
        else:
            store.skip_event(store.list_events(wf)[0].id, actor="alice")
            expected = EventNotPending
        before = snapshot(store, [wf])
        run_id = _new_run_id()
        with pytest.raises(expected) as refused:
            self._together(store, wf, shape, run_id, handler)
        assert all(name in str(refused.value) for name in named), (
            f"the refusal does not name the workflow and its active run: {refused.value}"
        )
        assert snapshot(store, [wf]) == before, f"refused ({cause}) but the store changed"
        assert run_id not in {r.id for r in store.list_runs(workflow=wf)}

    def test_of_merged_begins_racing_on_one_workflow_exactly_one_wins(self, store: Store) -> None:
        merged = self.merged(store)
        wf = self.deploy(store)
        self.publish(store, wf, "a", "b")
        ids = [_new_run_id() for _ in range(4)]

        def begin(run_id: str) -> str:
            try:
                merged.begin_consumer_run(
                    wf, CONSUMER, run_id=run_id, prepare_result=_RESERVED, intent=_intent(wf)
                )
            except ActiveRunExists:
                return "refused"
            return "begun"

        outcomes = self.at_once([functools.partial(begin, run_id) for run_id in ids])
        assert sorted(outcomes) == ["begun", "refused", "refused", "refused"]
        [winner] = [run_id for run_id, o in zip(ids, outcomes, strict=True) if o == "begun"]
        assert [r.id for r in store.list_runs(workflow=wf)] == [winner]
        assert [e.reserved_by for e in store.list_events(wf)] == [winner, winner]
        assert [e.run_id for e in store.list_ledger(workflow=wf)] == [winner]

    def test_applying_through_the_merged_checkpoint_answers_with_the_run_it_moved(
        self, store: Store
    ) -> None:
        merged = self.merged(store)
        wf = self.deploy(store)
        run = self.mutating(store, wf, "a")
        entry = self.intent(store, run)
        moved = merged.record_mutation_applied_run(entry.id, {"row": 7})
        assert moved == store.get_run(run.id)
        assert (moved.phase, moved.status) == (RunPhase.MUTATED, RunStatus.ACTIVE)
        assert moved.mutation_result == MutationApplied(result={"row": 7})
        settled = store.get_ledger_entry(entry.id)
        assert (settled.status, settled.result) == (LedgerStatus.APPLIED, {"row": 7})

    def _applied_apart(self, store: Store, workflow: str) -> RunRecord:
        run = self.mutating(store, workflow, "a", "b")
        entry = self.intent(store, run)
        store.record_mutation_applied(entry.id, {"row": 7})
        commit = store.commit_consumer_run(
            run.id, state={"n": 2}, publishes=[Publication(topic="out", message_id="r", title="R")]
        )
        return commit.run

    def test_a_merged_applied_commit_writes_what_applied_then_commit_write(
        self, store: Store
    ) -> None:
        merged = self.merged(store)
        apart, together = self.deploy(store), self.deploy(store)
        separate = self._applied_apart(store, apart)
        run = self.mutating(store, together, "a", "b")
        entry = self.intent(store, run)
        commit = merged.commit_applied_consumer_run(
            run.id,
            ledger_id=entry.id,
            result={"row": 7},
            state={"n": 2},
            publishes=[Publication(topic="out", message_id="r", title="R")],
        )
        assert commit.run == store.get_run(run.id)
        assert (commit.run.status, commit.run.phase) == (RunStatus.COMMITTED, RunPhase.COMMITTED)
        assert commit.run.mutation_result == MutationApplied(result={"row": 7})
        assert [p.outcome for p in commit.published] == [PublishOutcome.CREATED]
        assert _run_facts(commit.run) == _run_facts(separate)
        assert _event_facts(store, together, run.id) == _event_facts(store, apart, separate.id)
        assert {e.status for e in store.list_events(together, topic="in")} == {EventStatus.CONSUMED}
        assert _ledger_facts(store, together) == _ledger_facts(store, apart)
        assert store.get_handler(together, CONSUMER).state == {"n": 2}

    @pytest.mark.parametrize(
        ("cause", "expected"),
        [("another run's entry", StoreConflict), ("entry already applied", MutationConflict)],
    )
    def test_a_merged_applied_commit_is_refused_as_its_parts_are_and_writes_nothing(
        self, store: Store, cause: str, expected: type[KeepError]
    ) -> None:
        merged = self.merged(store)
        wf, other_wf = self.deploy(store), self.deploy(store)
        run = self.mutating(store, wf, "a")
        entry = self.intent(store, run)
        if cause == "another run's entry":
            other = self.mutating(store, other_wf, "x")
            ledger_id = self.intent(store, other).id
        else:
            store.record_mutation_applied(entry.id, {"row": 1})
            ledger_id = entry.id
        before = snapshot(store, [wf, other_wf])
        with pytest.raises(expected):
            merged.commit_applied_consumer_run(
                run.id, ledger_id=ledger_id, result={"row": 2}, state={"n": 9}
            )
        assert snapshot(store, [wf, other_wf]) == before, f"refused ({cause}) but changed"

    def test_a_merged_begin_with_an_intent_is_all_or_nothing(
        self, store: Store, faults: FaultInjector
    ) -> None:
        merged = self.merged(store)
        wf = self.deploy(store)
        self.publish(store, wf, "a", "b")
        run_id = _new_run_id()
        self.assert_all_or_nothing(
            store,
            faults,
            [wf],
            lambda: merged.begin_consumer_run(
                wf, CONSUMER, run_id=run_id, prepare_result=_RESERVED, intent=_intent(wf)
            ),
            min_points=2,
        )
        assert store.get_run(run_id).phase is RunPhase.MUTATING

    def test_a_merged_applied_commit_is_all_or_nothing(
        self, store: Store, faults: FaultInjector
    ) -> None:
        merged = self.merged(store)
        wf = self.deploy(store)
        run = self.mutating(store, wf, "a", "b")
        entry = self.intent(store, run)
        self.assert_all_or_nothing(
            store,
            faults,
            [wf],
            lambda: merged.commit_applied_consumer_run(
                run.id,
                ledger_id=entry.id,
                result={"row": 7},
                state={"n": 2},
                publishes=[Publication(topic="out", message_id="r", title="R")],
            ),
            min_points=2,
        )
        assert store.get_run(run.id).status is RunStatus.COMMITTED
