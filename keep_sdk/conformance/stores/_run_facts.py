"""Run facts kept as fields: the transient-failure count and the permission a run waits for."""

from __future__ import annotations

from collections.abc import Callable

from keep_sdk.conformance.stores._base import StoreTestBase
from keep_sdk.conformance.stores._support import CONSUMER
from keep_sdk.model import FailureKind, HandlerKind, RunPhase, RunStatus
from keep_sdk.stores import Store

__all__ = ["RunFactTests"]


class RunFactTests(StoreTestBase):
    """`RunRecord.transient_failures` and `RunRecord.waiting_permission` through set_run_status."""

    def test_each_transient_pause_is_counted_on_the_run(self, store: Store) -> None:
        wf = self.deploy(store)
        run = self.begin_consumer(store, wf)
        assert run.transient_failures == 0
        for expected in (1, 2):
            paused = store.set_run_status(
                run.id, RunStatus.PAUSED_TRANSIENT, error="503", failure=FailureKind.TRANSIENT
            )
            assert paused.transient_failures == expected
            assert store.set_run_status(run.id, RunStatus.ACTIVE).transient_failures == expected
        store.set_run_status(run.id, RunStatus.PAUSED_APPROVAL, failure=FailureKind.PERMISSION)
        crashed = store.set_run_status(run.id, RunStatus.CRASHED, error="died")
        assert crashed.transient_failures == 2
        assert store.get_run(run.id).transient_failures == 2
        retry = store.begin_run(
            wf, CONSUMER, HandlerKind.CONSUMER, retry_of=run.id, phase=RunPhase.PREPARING
        )
        assert retry.transient_failures == 0

    def test_the_permission_a_run_waits_for_is_kept_until_it_resumes(self, store: Store) -> None:
        wf = self.deploy(store)
        run = self.begin_consumer(store, wf)
        assert run.waiting_permission is None
        paused = store.set_run_status(
            run.id,
            RunStatus.PAUSED_APPROVAL,
            error="ctx.sheets.appendRow needs sheets.write",
            failure=FailureKind.PERMISSION,
            permission="sheets.write",
        )
        assert paused.waiting_permission == "sheets.write"
        assert store.get_run(run.id).waiting_permission == "sheets.write"
        listed = store.list_runs(workflow=wf, status=RunStatus.PAUSED_APPROVAL)
        assert [r.waiting_permission for r in listed] == ["sheets.write"]
        assert store.set_run_status(run.id, RunStatus.ACTIVE).waiting_permission is None
        assert store.get_run(run.id).waiting_permission is None

    def test_run_facts_survive_a_reopen(self, store: Store, reopen: Callable[[], Store]) -> None:
        wf = self.deploy(store)
        run = self.begin_consumer(store, wf)
        store.set_run_status(run.id, RunStatus.PAUSED_TRANSIENT, failure=FailureKind.TRANSIENT)
        store.set_run_status(run.id, RunStatus.ACTIVE)
        store.set_run_status(
            run.id,
            RunStatus.PAUSED_APPROVAL,
            failure=FailureKind.PERMISSION,
            permission="gmail.read",
        )
        again = reopen().get_run(run.id)
        assert (again.transient_failures, again.waiting_permission) == (1, "gmail.read")
        assert again == store.get_run(run.id)
