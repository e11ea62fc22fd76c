"""Clauses of the durable store contract that a plausible store bug breaks alone.

Each test pins one clause of the durable commit points (invocation records, the
notification inbox, poll claims, append-only attempts, timeouts, a person's
settlements) by comparing whole records, so a store that forgets a field, a stamp
or a reason fails it. For stores that declare ``supports_durable``.
"""

from __future__ import annotations

import datetime as dt
import uuid

import pytest

from keep_sdk.conformance.stores._durable import DurableTestBase
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
from keep_sdk.errors import (
    ActiveRunExists,
    MutationConflict,
    NotFound,
    RunNotActive,
    StoreConflict,
)
from keep_sdk.model import FailureKind, LedgerStatus, MutationApplied, RunPhase, RunStatus
from keep_sdk.stores import Store, SupportsDurable
from keep_sdk.stores.faults import FaultPoint

__all__ = ["DurableClauseTests"]

_HOUR = dt.timedelta(hours=1)


def _says(raised: pytest.ExceptionInfo[Exception], *parts: str) -> None:
    """Assert that the message of the error `raised` contains every one of `parts`."""
    message = str(raised.value)
    for part in parts:
        assert part in message, f"{part!r} is not in the message {message!r}"


def _json(answer: Pending | Done) -> object:
    return answer.model_dump(mode="json", by_alias=True)


class DurableClauseTests(DurableTestBase):
    """Whole records after each durable commit point, its refusals and its fault points."""

    def timed_out(self, store: Store, clock: ManualClock) -> tuple[str, Invocation]:
        """A parked invocation whose one-hour timeout has passed and been marked."""
        wf, invocation = self.parked(store, timeout_at=clock() + _HOUR)
        clock.advance(2 * 3600)
        timed_out = self.durable(store).time_out_invocation(invocation.id)
        assert timed_out is not None
        return wf, timed_out[0]

    def polling(
        self, store: Store, clock: ManualClock, *, timeout_at: dt.datetime | None = None
    ) -> tuple[str, Invocation]:
        """A parked invocation that polls (token kept, next poll in a minute)."""
        durable = self.durable(store)
        wf, invocation = self.started(store, timeout_at=timeout_at)
        invocation, _ = durable.record_start_answer(
            invocation.id, Pending(token="t0"), next_poll_at=clock() + dt.timedelta(minutes=1)
        )
        assert invocation.next_poll_at is not None
        return wf, invocation

    def test_an_intent_keeps_params_and_title_and_a_second_is_refused_by_name(
        self, store: Store
    ) -> None:
        durable = self.durable(store)
        _, invocation = self.started(store)
        entry = store.ledger_entry_for_run(invocation.run_id)
        assert entry is not None
        assert (entry.params, entry.ui_title) == ({"to": "ann@example.com"}, "Ask Ann")
        other_wf = self.deploy(store)
        other = self.mutating(store, other_wf)
        for invocation_id, key in (
            (invocation.id, "kc-" + uuid.uuid4().hex),
            ("inv-" + uuid.uuid4().hex, invocation.correlation_key),
        ):
            with pytest.raises(MutationConflict) as refused:
                durable.record_durable_intent(
                    other.id,
                    connector="approvals",
                    operation="request",
                    params={},
                    idempotency_key="k2",
                    invocation_id=invocation_id,
                    correlation_key=key,
                    timeout_at=None,
                )
            assert invocation_id in str(refused.value)
            assert str(refused.value).endswith("its durable operation once")
        assert store.ledger_entry_for_run(other.id) is None
        assert durable.invocation_for_run(other.id) is None

    def test_a_pending_answer_is_recorded_whole_and_a_poll_keeps_token_and_park_time(
        self, store: Store, clock: ManualClock
    ) -> None:
        durable = self.durable(store)
        _, invocation = self.started(store, timeout_at=clock() + 24 * _HOUR)
        clock.advance(5)
        parked_at = clock()
        answer = Pending(token="t1", external_id="req-9")
        poll_at = clock() + dt.timedelta(minutes=5)
        stored, run = durable.record_start_answer(
            invocation.id, answer, next_poll_at=poll_at, logs=["asked Ann"]
        )
        expected = invocation.model_copy(
            update={
                "started": True,
                "external_id": "req-9",
                "token": "t1",
                "polling": True,
                "next_poll_at": poll_at,
                "parked_at": parked_at,
                "updated_at": parked_at,
            }
        )
        assert stored == expected == durable.get_invocation(invocation.id)
        assert (run.status, run.error, run.failure, run.resume_at) == (
            RunStatus.PAUSED_WAITING,
            None,
            None,
            None,
        )
        assert (run.logs[-1:], run.updated_at) == (["asked Ann"], parked_at)
        [attempt] = durable.list_attempts(invocation.id)
        assert (attempt.kind, attempt.outcome, attempt.detail, attempt.at) == (
            AttemptKind.START,
            "pending",
            _json(answer),
            parked_at,
        )
        clock.advance(300)
        claim = durable.claim_invocation(invocation.id, "w1", until=clock() + _HOUR)
        assert claim is not None
        clock.advance(5)
        again = Pending()
        polled, _ = durable.record_start_answer(
            invocation.id,
            again,
            kind=AttemptKind.POLL,
            next_poll_at=clock() + _HOUR,
            claim_version=claim.claim_version,
        )
        assert polled == claim.model_copy(
            update={
                "polls": 1,
                "polling": False,
                "next_poll_at": None,
                "claim_owner": None,
                "claim_until": None,
                "updated_at": clock(),
            }
        )
        assert (polled.token, polled.parked_at) == ("t1", parked_at)
        assert [(a.kind, a.detail) for a in durable.list_attempts(invocation.id)] == [
            (AttemptKind.START, _json(answer)),
            (AttemptKind.POLL, _json(again)),
        ]
        with pytest.raises(StoreConflict) as stale:
            durable.record_start_answer(
                invocation.id, again, kind=AttemptKind.POLL, claim_version=claim.claim_version - 1
            )
        assert invocation.id in str(stale.value)

    def test_a_failed_answer_fails_invocation_and_entry_with_its_error(
        self, store: Store, clock: ManualClock
    ) -> None:
        durable = self.durable(store)
        _, invocation = self.parked(store)
        clock.advance(7)
        answer = Done(ok=False, error="quota exceeded", external_id="req-2")
        failed, run = durable.record_start_answer(invocation.id, answer, kind=AttemptKind.POLL)
        assert failed == durable.get_invocation(invocation.id)
        assert (failed.status, failed.error, failed.result, failed.next_poll_at) == (
            InvocationStatus.FAILED,
            "quota exceeded",
            None,
            None,
        )
        assert (failed.external_id, failed.updated_at) == ("req-2", clock())
        entry = store.ledger_entry_for_run(invocation.run_id)
        assert entry is not None
        assert (entry.status, entry.error, entry.updated_at) == (
            LedgerStatus.FAILED,
            "quota exceeded",
            clock(),
        )
        assert run == store.get_run(invocation.run_id)
        assert run.status is RunStatus.PAUSED_WAITING
        last = durable.list_attempts(invocation.id)[-1]
        assert (last.kind, last.outcome, last.detail) == (
            AttemptKind.POLL,
            "error",
            _json(answer),
        )
        with pytest.raises(MutationConflict) as refused:
            durable.record_start_answer(invocation.id, Done(result=1))
        _says(refused, invocation.id, "failed")
        assert str(refused.value).endswith("answer for it changes nothing")

    def test_a_done_answer_settles_entry_and_run_stamped_with_its_result(
        self, store: Store, clock: ManualClock
    ) -> None:
        durable = self.durable(store)
        _, invocation = self.polling(store, clock)
        clock.advance(9)
        answer = Done(result={"approved": True})
        done, run = durable.record_start_answer(invocation.id, answer)
        assert (done.status, done.result, done.error, done.updated_at) == (
            InvocationStatus.COMPLETED,
            {"approved": True},
            None,
            clock(),
        )
        assert (done.next_poll_at, done.token) == (None, "t0")
        assert (run.status, run.phase, run.updated_at) == (
            RunStatus.ACTIVE,
            RunPhase.MUTATED,
            clock(),
        )
        assert run.mutation_result == MutationApplied(result={"approved": True})
        entry = store.ledger_entry_for_run(run.id)
        assert entry is not None
        assert (entry.status, entry.result, entry.updated_at) == (
            LedgerStatus.APPLIED,
            {"approved": True},
            clock(),
        )
        assert durable.list_attempts(invocation.id)[-1].outcome == "done"

    def test_an_answer_for_an_entry_settled_elsewhere_is_refused_naming_the_entry(
        self, store: Store
    ) -> None:
        durable = self.durable(store)
        _, invocation = self.parked(store)
        store.record_mutation_failed(invocation.ledger_id, error="given up")
        with pytest.raises(MutationConflict) as refused:
            durable.record_start_answer(invocation.id, Done(result=1))
        assert invocation.ledger_id in str(refused.value)
        assert str(refused.value).endswith("its durable operation was settled already")
        assert durable.get_invocation(invocation.id).status is InvocationStatus.ACTIVE

    def test_each_delivery_is_recorded_with_its_outcome_and_why(
        self, store: Store, clock: ManualClock
    ) -> None:
        durable = self.durable(store)
        _, invocation = self.parked(store)
        attempts = len(durable.list_attempts(invocation.id))
        clock.advance(3)
        pending = durable.receive_notification(invocation.correlation_key, {"n": 1}, source="hook")
        assert pending == durable.list_notifications(invocation.id)[0]
        assert (pending.outcome, pending.detail, pending.processed_at) == (
            NotificationOutcome.PENDING,
            None,
            None,
        )
        assert (pending.result, pending.source, pending.received_at) == ({"n": 1}, "hook", clock())
        assert (pending.workflow, pending.correlation_key) == (
            invocation.workflow,
            invocation.correlation_key,
        )
        assert len(durable.list_attempts(invocation.id)) == attempts
        durable.apply_notification(pending.id)
        clock.advance(3)
        late = durable.receive_notification(invocation.correlation_key, {"n": 2}, source="hook")
        assert (late.outcome, late.processed_at) == (NotificationOutcome.DUPLICATE, clock())
        assert late.detail is not None
        assert invocation.id in late.detail
        assert "already completed" in late.detail
        last = durable.list_attempts(invocation.id)[-1]
        assert (last.kind, last.outcome, last.detail) == (
            AttemptKind.NOTIFICATION,
            "duplicate",
            late.detail,
        )
        _, other = self.parked(store)
        durable.end_invocation(
            other.id, InvocationStatus.CANCELLED, actor="ops", detail="x", kind=AttemptKind.CANCEL
        )
        ignored = durable.receive_notification(other.correlation_key, None, source="hook")
        assert ignored.outcome is NotificationOutcome.IGNORED
        assert ignored.detail is not None
        assert other.id in ignored.detail
        assert "cancelled" in ignored.detail
        unknown = "kc-" + uuid.uuid4().hex
        with pytest.raises(NotFound) as refused:
            durable.receive_notification(unknown, {}, source="hook")
        assert unknown in str(refused.value)
        assert str(refused.value).endswith(
            "check the key (`keep status` lists the runs that wait and their keys)"
        )

    def test_applying_completes_the_invocation_and_closes_only_the_pending_deliveries(
        self, store: Store, clock: ManualClock
    ) -> None:
        durable = self.durable(store)
        _, invocation = self.timed_out(store, clock)
        ignored = durable.receive_notification(invocation.correlation_key, 0, source="t")
        durable.extend_invocation(invocation.id, timeout_at=clock() + _HOUR, actor="ops")
        claim = durable.claim_invocation(invocation.id, "w1", until=clock() + _HOUR)
        assert claim is not None
        durable.record_start_answer(
            invocation.id,
            Pending(token="t"),
            kind=AttemptKind.POLL,
            next_poll_at=clock() + _HOUR,
            claim_version=claim.claim_version,
        )
        first = durable.receive_notification(invocation.correlation_key, {"n": 1}, source="t")
        second = durable.receive_notification(invocation.correlation_key, {"n": 2}, source="t")
        clock.advance(4)
        applied, run = durable.apply_notification(first.id)
        assert (applied.outcome, applied.detail, applied.processed_at) == (
            NotificationOutcome.APPLIED,
            None,
            clock(),
        )
        stored = durable.get_invocation(invocation.id)
        assert (stored.status, stored.result, stored.next_poll_at, stored.updated_at) == (
            InvocationStatus.COMPLETED,
            {"n": 1},
            None,
            clock(),
        )
        assert (run.status, run.mutation_result) == (
            RunStatus.ACTIVE,
            MutationApplied(result={"n": 1}),
        )
        last = durable.list_attempts(invocation.id)[-1]
        assert (last.kind, last.outcome, last.detail) == (
            AttemptKind.NOTIFICATION,
            "applied",
            {"notification": first.id},
        )
        notes = {n.id: n for n in durable.list_notifications(invocation.id)}
        assert notes[ignored.id] == ignored
        assert (notes[second.id].outcome, notes[second.id].processed_at) == (
            NotificationOutcome.DUPLICATE,
            clock(),
        )
        assert notes[second.id].detail == f"notification {first.id} completed the invocation first"
        with pytest.raises(StoreConflict) as refused:
            durable.apply_notification(first.id)
        _says(refused, first.id, "applied")
        with pytest.raises(NotFound) as missing:
            durable.apply_notification("ntf_missing")
        assert "ntf_missing" in str(missing.value)

    def test_a_pending_delivery_for_an_ended_invocation_is_closed_not_applied(
        self, store: Store, clock: ManualClock
    ) -> None:
        durable = self.durable(store)
        _, done = self.started(store)
        early = durable.receive_notification(done.correlation_key, {"n": 1}, source="t")
        durable.record_start_answer(done.id, Done(result={"n": 0}))
        clock.advance(1)
        closed, run = durable.apply_notification(early.id)
        assert (closed.outcome, closed.detail, closed.processed_at) == (
            NotificationOutcome.DUPLICATE,
            "invocation is completed",
            clock(),
        )
        assert closed == durable.list_notifications(done.id)[0]
        assert run == store.get_run(done.run_id)
        assert run.mutation_result == MutationApplied(result={"n": 0})
        _, timed = self.started(store, timeout_at=clock() + _HOUR)
        other = durable.receive_notification(timed.correlation_key, {"n": 1}, source="t")
        durable.record_start_answer(timed.id, Pending())
        clock.advance(2 * 3600)
        assert durable.time_out_invocation(timed.id) is not None
        closed, run = durable.apply_notification(other.id)
        assert (closed.outcome, closed.detail) == (
            NotificationOutcome.IGNORED,
            "invocation is timed_out",
        )
        assert run.status is RunStatus.PAUSED_TIMEOUT

    def test_a_delivery_waits_while_the_run_is_not_parked_or_another_run_is_active(
        self, store: Store
    ) -> None:
        durable = self.durable(store)
        wf, invocation = self.started(store)
        early = durable.receive_notification(invocation.correlation_key, 1, source="t")
        with pytest.raises(StoreConflict) as waits:
            durable.apply_notification(early.id)
        assert invocation.run_id in str(waits.value)
        assert str(waits.value).endswith("the notification stays in the inbox until it is")
        durable.record_start_answer(invocation.id, Pending())
        blocking = self.begin_consumer(store, wf)
        with pytest.raises(ActiveRunExists) as busy:
            durable.apply_notification(early.id)
        _says(busy, wf, blocking.id)
        with pytest.raises(ActiveRunExists) as busy:
            durable.resolve_invocation(invocation.id, "cancel", actor="ann")
        _says(busy, wf, blocking.id)
        assert durable.list_notifications(invocation.id)[0].outcome is NotificationOutcome.PENDING
        assert durable.get_invocation(invocation.id).status is InvocationStatus.ACTIVE

    def test_a_claim_expires_at_its_instant_and_is_stamped(
        self, store: Store, clock: ManualClock
    ) -> None:
        durable = self.durable(store)
        _, invocation = self.parked(store)
        clock.advance(1)
        first = durable.claim_invocation(invocation.id, "w1", until=clock() + _HOUR)
        assert first is not None
        assert (first.claim_owner, first.claim_until, first.updated_at) == (
            "w1",
            clock() + _HOUR,
            clock(),
        )
        assert durable.get_invocation(invocation.id) == first
        clock.advance(3600)
        second = durable.claim_invocation(invocation.id, "w2", until=clock() + _HOUR)
        assert second is not None
        assert (second.claim_owner, second.claim_version) == ("w2", first.claim_version + 1)

    def test_a_timeout_comes_due_at_its_instant_and_says_what_was_awaited(
        self, store: Store, clock: ManualClock
    ) -> None:
        durable = self.durable(store)
        deadline = clock() + _HOUR
        wf, invocation = self.polling(store, clock, timeout_at=deadline)
        claim = durable.claim_invocation(invocation.id, "w1", until=clock() + 2 * _HOUR)
        assert claim is not None
        clock.advance(3600)
        timed_out = durable.time_out_invocation(invocation.id)
        assert timed_out is not None
        ended, run = timed_out
        why = ended.error
        assert why is not None
        assert "ctx.approvals.request" in why
        assert deadline.strftime("%Y-%m-%d %H:%M:%S") in why
        assert invocation.correlation_key in why
        assert ended == claim.model_copy(
            update={
                "status": InvocationStatus.TIMED_OUT,
                "error": why,
                "next_poll_at": None,
                "claim_owner": None,
                "claim_until": None,
                "updated_at": clock(),
            }
        )
        assert durable.get_invocation(invocation.id) == ended
        assert (run.status, run.error, run.updated_at) == (RunStatus.PAUSED_TIMEOUT, why, clock())
        last = durable.list_attempts(invocation.id)[-1]
        assert (last.kind, last.outcome, last.detail) == (AttemptKind.TIMEOUT, "timed_out", why)
        _, cancelled = self.parked(store, timeout_at=clock())
        durable.end_invocation(
            cancelled.id,
            InvocationStatus.CANCELLED,
            actor="ops",
            detail="x",
            kind=AttemptKind.CANCEL,
        )
        clock.advance(60)
        assert durable.time_out_invocation(cancelled.id) is None
        assert durable.get_invocation(cancelled.id).status is InvocationStatus.CANCELLED
        assert wf

    def test_ending_an_invocation_records_why_and_only_once(
        self, store: Store, clock: ManualClock
    ) -> None:
        durable = self.durable(store)
        _, invocation = self.polling(store, clock)
        claim = durable.claim_invocation(invocation.id, "w1", until=clock() + _HOUR)
        assert claim is not None
        clock.advance(11)
        ended = durable.end_invocation(
            invocation.id,
            InvocationStatus.CANCELLED,
            actor="ops",
            detail="not needed",
            kind=AttemptKind.CANCEL,
        )
        assert ended == claim.model_copy(
            update={
                "status": InvocationStatus.CANCELLED,
                "error": "not needed",
                "next_poll_at": None,
                "claim_owner": None,
                "claim_until": None,
                "updated_at": clock(),
            }
        )
        assert durable.get_invocation(invocation.id) == ended
        last = durable.list_attempts(invocation.id)[-1]
        assert (last.kind, last.outcome, last.detail, last.at) == (
            AttemptKind.CANCEL,
            "cancelled",
            {"actor": "ops", "detail": "not needed"},
            clock(),
        )
        with pytest.raises(MutationConflict) as refused:
            durable.end_invocation(
                invocation.id,
                InvocationStatus.TIMED_OUT,
                actor="ops",
                detail="again",
                kind=AttemptKind.TIMEOUT,
            )
        _says(refused, invocation.id, "cancelled, not active")
        with pytest.raises(NotFound) as missing:
            durable.end_invocation(
                "inv-missing",
                InvocationStatus.CANCELLED,
                actor="ops",
                detail="x",
                kind=AttemptKind.CANCEL,
            )
        assert "inv-missing" in str(missing.value)

    def test_extending_revives_a_timed_out_wait_and_is_audited(
        self, store: Store, clock: ManualClock
    ) -> None:
        durable = self.durable(store)
        wf, invocation = self.timed_out(store, clock)
        clock.advance(5)
        until = clock() + 24 * _HOUR
        who = f"person-{uuid.uuid4().hex[:6]}"
        extended = durable.extend_invocation(invocation.id, timeout_at=until, actor=who)
        assert extended == invocation.model_copy(
            update={
                "status": InvocationStatus.ACTIVE,
                "timeout_at": until,
                "error": None,
                "updated_at": clock(),
            }
        )
        assert durable.get_invocation(invocation.id) == extended
        run = store.get_run(invocation.run_id)
        assert (run.status, run.error, run.failure, run.updated_at) == (
            RunStatus.PAUSED_WAITING,
            None,
            None,
            clock(),
        )
        last = durable.list_attempts(invocation.id)[-1]
        assert (last.kind, last.outcome, last.detail) == (
            AttemptKind.ACTION,
            "extended",
            {"actor": who, "timeoutAt": until.isoformat()},
        )
        [audit] = [a for a in store.audit_log(workflow=wf) if a.action == "durable:extend"]
        assert (audit.actor, audit.target, audit.workflow, audit.detail) == (
            who,
            invocation.id,
            wf,
            {"run": run.id, "timeoutAt": until.isoformat()},
        )
        clock.advance(5)
        open_ended = durable.extend_invocation(invocation.id, timeout_at=None, actor=who)
        assert (open_ended.timeout_at, open_ended.updated_at) == (None, clock())
        assert durable.list_attempts(invocation.id)[-1].detail == {
            "actor": who,
            "timeoutAt": None,
        }
        assert store.get_run(run.id).status is RunStatus.PAUSED_WAITING
        durable.record_start_answer(invocation.id, Done(result=1))
        with pytest.raises(MutationConflict) as refused:
            durable.extend_invocation(invocation.id, timeout_at=until, actor=who)
        _says(refused, invocation.id, "completed", "only an active or timed-out invocation")

    def test_a_failed_poll_is_recorded_and_frees_its_claim(
        self, store: Store, clock: ManualClock
    ) -> None:
        durable = self.durable(store)
        _, invocation = self.started(store)
        durable.record_start_answer(invocation.id, Pending(token="t"), next_poll_at=clock())
        claim = durable.claim_invocation(invocation.id, "w1", until=clock() + _HOUR)
        assert claim is not None
        clock.advance(2)
        retry_at = clock() + _HOUR
        failed = durable.record_poll_failure(
            invocation.id,
            error="503 from the service",
            next_poll_at=retry_at,
            claim_version=claim.claim_version,
        )
        assert failed == claim.model_copy(
            update={
                "polls": claim.polls + 1,
                "next_poll_at": retry_at,
                "claim_owner": None,
                "claim_until": None,
                "updated_at": clock(),
            }
        )
        assert durable.get_invocation(invocation.id) == failed
        assert [i.id for i in durable.due_polls(retry_at, limit=1000)].count(invocation.id) == 1
        last = durable.list_attempts(invocation.id)[-1]
        assert (last.kind, last.outcome, last.detail, last.at) == (
            AttemptKind.POLL,
            "error",
            "503 from the service",
            clock(),
        )
        attempts = durable.list_attempts(invocation.id)
        with pytest.raises(StoreConflict) as stale:
            durable.record_poll_failure(
                invocation.id, error="late", next_poll_at=retry_at, claim_version=0
            )
        assert invocation.id in str(stale.value)
        assert durable.list_attempts(invocation.id) == attempts
        durable.record_start_answer(invocation.id, Done(result=1))
        with pytest.raises(MutationConflict) as ended:
            durable.record_poll_failure(
                invocation.id, error="late", next_poll_at=retry_at, claim_version=0
            )
        _says(ended, invocation.id, "completed")

    def test_attempts_are_append_only_and_keep_their_order(
        self, store: Store, clock: ManualClock
    ) -> None:
        durable = self.durable(store)
        _, invocation = self.parked(store)
        before = durable.list_attempts(invocation.id)
        clock.advance(1)
        one = durable.record_attempt(invocation.id, AttemptKind.CANCEL, "sent", {"http": 202})
        clock.advance(1)
        two = durable.record_attempt(invocation.id, AttemptKind.CANCEL, "refused")
        assert (one.invocation_id, one.kind, one.outcome, one.detail, one.at) == (
            invocation.id,
            AttemptKind.CANCEL,
            "sent",
            {"http": 202},
            clock() - dt.timedelta(seconds=1),
        )
        assert (two.outcome, two.detail, two.at) == ("refused", None, clock())
        assert before[-1].seq < one.seq < two.seq
        assert durable.list_attempts(invocation.id) == [*before, one, two]
        with pytest.raises(NotFound) as missing:
            durable.record_attempt("inv-missing", AttemptKind.CANCEL, "sent")
        assert "inv-missing" in str(missing.value)

    def test_a_persons_cancel_skip_and_supply_settle_entry_and_run_as_said(
        self, store: Store, clock: ManualClock
    ) -> None:
        durable = self.durable(store)
        wf, invocation = self.polling(store, clock)
        claim = durable.claim_invocation(invocation.id, "w1", until=clock() + _HOUR)
        assert claim is not None
        pending = durable.receive_notification(invocation.correlation_key, 0, source="t")
        clock.advance(13)
        ended, run = durable.resolve_invocation(
            invocation.id, "supply", actor="ann", result={"ok": 1}, detail="by phone"
        )
        assert ended == claim.model_copy(
            update={
                "status": InvocationStatus.COMPLETED,
                "result": {"ok": 1},
                "error": "by phone",
                "next_poll_at": None,
                "claim_owner": None,
                "claim_until": None,
                "updated_at": clock(),
            }
        )
        assert durable.get_invocation(invocation.id) == ended
        entry = store.ledger_entry_for_run(run.id)
        assert entry is not None
        assert (entry.status, entry.result, entry.error) == (LedgerStatus.APPLIED, {"ok": 1}, None)
        assert (entry.resolved_by, entry.resolved_at, entry.updated_at) == ("ann", clock(), clock())
        assert (run.status, run.phase, run.mutation_result) == (
            RunStatus.ACTIVE,
            RunPhase.MUTATED,
            MutationApplied(result={"ok": 1}),
        )
        assert (run.error, run.failure, run.updated_at) == (None, None, clock())
        last = durable.list_attempts(invocation.id)[-1]
        assert (last.kind, last.outcome, last.detail) == (
            AttemptKind.ACTION,
            "supply",
            {"actor": "ann", "detail": "by phone"},
        )
        [note] = durable.list_notifications(invocation.id)
        assert (note.id, note.outcome, note.detail) == (
            pending.id,
            NotificationOutcome.IGNORED,
            "a person chose supply",
        )
        [audit] = [a for a in store.audit_log(workflow=wf) if a.action == "durable:supply"]
        assert (audit.actor, audit.target, audit.detail) == (
            "ann",
            invocation.id,
            {"run": run.id, "detail": "by phone"},
        )
        with pytest.raises(MutationConflict) as refused:
            durable.resolve_invocation(invocation.id, "skip", actor="ann")
        _says(refused, invocation.id, "completed", "only a waiting or timed-out invocation")

    def test_a_skip_keeps_a_timeout_and_clears_the_runs_error(
        self, store: Store, clock: ManualClock
    ) -> None:
        durable = self.durable(store)
        _, invocation = self.timed_out(store, clock)
        ended, run = durable.resolve_invocation(
            invocation.id, "skip", actor="ann", result={"ignored": True}, detail="late"
        )
        assert (ended.status, ended.result, ended.error) == (
            InvocationStatus.TIMED_OUT,
            None,
            "late",
        )
        assert (run.status, run.phase, run.error) == (RunStatus.ACTIVE, RunPhase.EMITTING, None)
        assert run.mutation_result is not None
        assert run.mutation_result.status == "skipped"
        entry = store.ledger_entry_for_run(run.id)
        assert entry is not None
        assert (entry.status, entry.result, entry.error, entry.resolved_by) == (
            LedgerStatus.FAILED,
            None,
            "late",
            "ann",
        )
        _, active = self.parked(store)
        skipped, _ = durable.resolve_invocation(active.id, "skip", actor="ann")
        assert skipped.status is InvocationStatus.CANCELLED

    def test_a_resolution_is_refused_when_the_entry_was_settled_elsewhere(
        self, store: Store
    ) -> None:
        durable = self.durable(store)
        _, invocation = self.parked(store)
        store.record_mutation_failed(invocation.ledger_id, error="given up")
        with pytest.raises(MutationConflict) as refused:
            durable.resolve_invocation(invocation.id, "cancel", actor="ann")
        _says(refused, invocation.ledger_id, "failed")

    def test_durable_commit_points_call_the_fault_hook_at_their_named_points(
        self, store: Store, faults: FaultInjector
    ) -> None:
        durable = self.durable(store)
        faults.disarm()
        faults.calls = []
        _, invocation = self.started(store)
        durable.record_start_answer(invocation.id, Pending())
        note = durable.receive_notification(invocation.correlation_key, 1, source="t")
        durable.apply_notification(note.id)
        assert {
            FaultPoint.DURABLE_INTENT,
            FaultPoint.DURABLE_ANSWER,
            FaultPoint.APPLY_NOTIFICATION,
        } <= set(faults.calls)
        assert None not in faults.calls

    def test_scans_use_the_instant_and_limit_given_and_lists_filter_together(
        self, store: Store, clock: ManualClock
    ) -> None:
        durable = self.durable(store)
        wf, one = self.parked(store, timeout_at=clock() + _HOUR)
        _, two = self.parked(store, timeout_at=clock() + 2 * _HOUR)
        for invocation in (one, two):
            claim = durable.claim_invocation(invocation.id, "w", until=clock())
            assert claim is not None
            durable.record_start_answer(
                invocation.id,
                Pending(token="t"),
                kind=AttemptKind.POLL,
                next_poll_at=invocation.timeout_at,
                claim_version=claim.claim_version,
            )
        later = clock() + 3 * _HOUR
        mine = {one.id, two.id}
        assert [i.id for i in durable.due_polls(clock(), limit=1000) if i.id in mine] == []
        assert [i.id for i in durable.due_polls(later, limit=1000) if i.id in mine] == [
            one.id,
            two.id,
        ]
        assert len(durable.due_polls(later, limit=1)) == 1
        assert [
            i.id for i in durable.expired_invocations(clock(), limit=1000) if i.id in mine
        ] == []
        assert [i.id for i in durable.expired_invocations(later, limit=1000) if i.id in mine] == [
            one.id,
            two.id,
        ]
        assert len(durable.expired_invocations(later, limit=1)) == 1
        durable.record_start_answer(two.id, Done(result=1))
        assert durable.list_invocations(workflow=wf, status=InvocationStatus.ACTIVE) == [
            durable.get_invocation(one.id)
        ]
        assert durable.list_invocations(workflow=wf, status=InvocationStatus.COMPLETED) == []
        key = "kc-" + uuid.uuid4().hex
        with pytest.raises(NotFound) as missing:
            durable.invocation_by_key(key)
        assert key in str(missing.value)
        with pytest.raises(NotFound) as missing:
            durable.get_invocation("inv-missing")
        assert "inv-missing" in str(missing.value)

    def test_the_inbox_hands_out_at_most_a_hundred_deliveries_by_default(
        self, store: Store
    ) -> None:
        durable = self.durable(store)
        _, invocation = self.parked(store)
        for n in range(101):
            durable.receive_notification(invocation.correlation_key, n, source="t")
        mine = [n for n in durable.deliverable_notifications() if n.invocation_id == invocation.id]
        assert len(durable.deliverable_notifications()) == 100
        assert [n.result for n in mine] == list(range(len(mine)))

    @pytest.mark.parametrize("waiting", [1, 4, 12])
    def test_deliveries_that_must_wait_do_not_use_up_the_page(
        self, store: Store, waiting: int
    ) -> None:
        """A page of deliveries is full while deliverable notifications remain, however
        many that must wait (their run is not parked yet) came before them."""
        durable = self.durable(store)
        _, early = self.started(store)
        for n in range(waiting):
            durable.receive_notification(early.correlation_key, n, source="early")
        _, parked = self.parked(store)
        for n in range(5):
            durable.receive_notification(parked.correlation_key, n, source="t")
        page = durable.deliverable_notifications(limit=4)
        assert len(page) == 4, (
            f"{waiting} notifications waiting ahead left {len(page)} of 4 deliveries"
        )
        for notification in page:
            invocation = durable.get_invocation(notification.invocation_id)
            assert store.get_run(invocation.run_id).status is RunStatus.PAUSED_WAITING
        mine = [n.result for n in page if n.invocation_id == parked.id]
        assert mine == list(range(len(mine))), "deliveries are not oldest first"

    def test_a_resolution_is_refused_once_the_run_no_longer_waits(self, store: Store) -> None:
        durable = self.durable(store)
        _, invocation = self.parked(store)
        store.set_run_status(invocation.run_id, RunStatus.FAILED_LOGIC, error="given up")
        with pytest.raises(RunNotActive) as refused:
            durable.resolve_invocation(invocation.id, "cancel", actor="ann")
        _says(refused, invocation.run_id, "ctx.approvals.request")
        assert durable.get_invocation(invocation.id).status is InvocationStatus.ACTIVE

    def test_the_scans_hand_out_at_most_a_hundred_by_default(
        self, store: Store, clock: ManualClock
    ) -> None:
        durable = self.durable(store)
        wf = self.deploy(store)
        for _ in range(101):
            run = self.mutating(store, wf)
            invocation_id, key = derive_invocation(wf, run.handler, run.id)
            durable.record_durable_intent(
                run.id,
                connector="approvals",
                operation="request",
                params={},
                idempotency_key=f"{wf}:{run.id}",
                invocation_id=invocation_id,
                correlation_key=key,
                timeout_at=clock(),
            )
            durable.record_start_answer(invocation_id, Pending(token="t"), next_poll_at=clock())
        assert len(durable.due_polls(clock())) == 100
        assert len(durable.expired_invocations(clock())) == 100

    def test_a_store_without_durable_rows_finds_no_durable_work(self, store: Store) -> None:
        if self.supports_durable:
            pytest.skip(f"{type(self).__name__} declares supports_durable")
        if not isinstance(store, SupportsDurable):
            pytest.skip(f"{type(store).__name__} offers no durable queries")
        wf = self.deploy(store)
        run = self.mutating(store, wf)
        assert store.invocation_for_run(run.id) is None
        assert store.due_polls() == []
        assert store.expired_invocations() == []
        assert store.deliverable_notifications() == []

    def carrying_an_error(self, store: Store, clock: ManualClock) -> tuple[str, Invocation]:
        """An invocation whose run was resumed still carrying an error, failure and time."""
        durable = self.durable(store)
        wf = self.deploy(store)
        run = self.mutating(store, wf, "a")
        for status in (RunStatus.PAUSED_TRANSIENT, RunStatus.ACTIVE):
            store.set_run_status(
                run.id,
                status,
                error="connection reset",
                failure=FailureKind.TRANSIENT,
                resume_at=clock() + _HOUR,
            )
        invocation_id, key = derive_invocation(wf, run.handler, run.id)
        _, invocation = durable.record_durable_intent(
            run.id,
            connector="approvals",
            operation="request",
            params={},
            idempotency_key=f"{wf}:{run.id}",
            invocation_id=invocation_id,
            correlation_key=key,
            timeout_at=None,
        )
        assert store.get_run(run.id).error == "connection reset"
        return wf, invocation

    def test_parking_clears_the_runs_error_failure_and_resume_time(
        self, store: Store, clock: ManualClock
    ) -> None:
        durable = self.durable(store)
        _, invocation = self.carrying_an_error(store, clock)
        _, run = durable.record_start_answer(invocation.id, Pending())
        assert (run.status, run.error, run.failure, run.resume_at) == (
            RunStatus.PAUSED_WAITING,
            None,
            None,
            None,
        )
        assert store.get_run(run.id) == run

    def test_settling_by_hand_clears_the_runs_error_and_failure(
        self, store: Store, clock: ManualClock
    ) -> None:
        durable = self.durable(store)
        _, invocation = self.carrying_an_error(store, clock)
        _, run = durable.resolve_invocation(invocation.id, "cancel", actor="ann")
        assert (run.status, run.error, run.failure) == (RunStatus.ACTIVE, None, None)
        assert store.get_run(run.id) == run

    def test_a_run_leaving_a_wait_drops_the_error_it_waited_with(
        self, store: Store, clock: ManualClock
    ) -> None:
        durable = self.durable(store)
        _, answered = self.carrying_an_error(store, clock)
        store.set_run_status(
            answered.run_id, RunStatus.PAUSED_WAITING, error="waits", failure=FailureKind.TRANSIENT
        )
        _, run = durable.record_start_answer(answered.id, Done(result=1))
        assert (run.status, run.error, run.failure) == (RunStatus.ACTIVE, None, None)
        _, extended = self.carrying_an_error(store, clock)
        store.set_run_status(
            extended.run_id, RunStatus.PAUSED_TIMEOUT, error="late", failure=FailureKind.TRANSIENT
        )
        durable.extend_invocation(extended.id, timeout_at=None, actor="ann")
        run = store.get_run(extended.run_id)
        assert (run.status, run.error, run.failure) == (RunStatus.PAUSED_WAITING, None, None)
