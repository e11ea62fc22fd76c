"""A person's actions on a run that waits for a durable operation: extend, start again,
cancel, skip, supply.

`DurableActions` is part of `PersonActions`. Each action is audited by the
store's `resolve_invocation` in the transaction that settles the invocation,
and the run then continues in this process (``next`` and the commit), so the
caller holds the workflow's lease (the CLI does).
"""

from __future__ import annotations

import datetime as dt
from typing import TYPE_CHECKING

from pydantic import JsonValue

from keep_sdk.contract.durable import (
    AttemptKind,
    Invocation,
    InvocationContext,
    parse_duration,
)
from keep_sdk.errors import ActionRefused
from keep_sdk.model import RunRecord, RunStatus
from keep_sdk.runtime.durable import durable_store
from keep_sdk.stores import PersonSettlement

if TYPE_CHECKING:
    from keep_sdk.runtime.engine import Runtime

__all__ = ["CANCELLED_BY", "SKIPPED_BY", "DurableActions"]

CANCELLED_BY = "cancelled by "
"""How the detail of a cancelled durable wait begins (the ledger says so, `ledger_decision`)."""
SKIPPED_BY = "skipped by "
"""How the detail of a skipped durable wait begins."""

_SETTLEABLE = (RunStatus.PAUSED_WAITING, RunStatus.PAUSED_TIMEOUT)


class DurableActions:
    """Extend, start again, cancel, skip or supply the result of a run's durable operation."""

    runtime: Runtime

    def cancel(self, run_id: str, *, actor: str, reason: str | None = None) -> RunRecord:
        """Cancel the run's waiting durable operation and finish the run.

        The invocation becomes ``cancelled`` (a later notification is recorded and
        changes nothing), the connector's ``cancel`` is called best-effort (its
        outcome is an attempt record), ``next`` runs with ``{status: "skipped"}``
        and the run commits; its reserved events become ``skipped``.
        """
        invocation = self._waiting(run_id, "cancel")
        detail = f"{CANCELLED_BY}{actor}" + (f": {reason}" if reason else "")
        _, run = durable_store(self.runtime.store).resolve_invocation(
            invocation.id, "cancel", actor=actor, detail=detail
        )
        self._cancel_externally(invocation)
        return self.runtime.drive(run)

    def extend(self, run_id: str, *, until: dt.datetime | None, actor: str) -> RunRecord:
        """Give the run's durable operation a new deadline (None: wait without one); a
        timed-out run waits again."""
        invocation = self._waiting(run_id, "extend")
        durable_store(self.runtime.store).extend_invocation(
            invocation.id, timeout_at=until, actor=actor
        )
        return self.runtime.store.get_run(run_id)

    def extend_by(self, run_id: str, *, by: dt.timedelta, actor: str) -> RunRecord:
        """Add `by` to the durable operation's deadline: a wait of 14 days extended by one
        day ends after 15. A deadline already past (a timed-out run) or none counts from
        now, so the new one always lies `by` ahead of whichever is later."""
        invocation = self._waiting(run_id, "extend")
        now = self.runtime.now()
        current = invocation.timeout_at
        base = current if current is not None and current > now else now
        return self.extend(run_id, until=base + by, actor=actor)

    def start_again(self, run_id: str, *, actor: str) -> RunRecord:
        """Start the external work once more (a new attempt with a new token) and wait again
        for the same correlation key, with the park timeout frozen with the run's version
        from now."""
        invocation = self._waiting(run_id, "start-again")
        store = durable_store(self.runtime.store)
        semantics = self.runtime.durable_semantics(
            self.runtime.store.get_run(run_id), invocation.connector, invocation.operation
        )
        until = (
            self.runtime.now() + parse_duration(semantics.timeout)
            if semantics.timeout is not None
            else None
        )
        store.extend_invocation(invocation.id, timeout_at=until, actor=actor)
        restarts = sum(1 for a in store.list_attempts(invocation.id) if a.outcome == "extended")
        entry = self.runtime.store.get_ledger_entry(invocation.ledger_id)
        context = InvocationContext(
            invocation_id=f"{invocation.id}.r{restarts}",
            correlation_key=invocation.correlation_key,
            idempotency_key=entry.idempotency_key,
            timeout_at=until,
            token=None,
        )
        answer = self.runtime.connectors[invocation.connector].start(
            invocation.operation, entry.params, context
        )
        store.record_start_answer(invocation.id, answer, kind=AttemptKind.START)
        return self.runtime.store.get_run(run_id)

    def skip_wait(self, run_id: str, *, actor: str) -> RunRecord:
        """Stop waiting without a result: ``next`` runs with ``{status: "skipped"}``."""
        return self._settle(run_id, "skip", actor=actor)

    def supply_result(self, run_id: str, result: JsonValue, *, actor: str) -> RunRecord:
        """Give the durable operation's result by hand: ``next`` runs with it as applied."""
        return self._settle(run_id, "supply", actor=actor, result=result)

    def _settle(
        self, run_id: str, action: PersonSettlement, *, actor: str, result: JsonValue = None
    ) -> RunRecord:
        invocation = self._waiting(run_id, action)
        _, run = durable_store(self.runtime.store).resolve_invocation(
            invocation.id, action, actor=actor, result=result, detail=_detail(action, actor)
        )
        if action == "skip":
            self._cancel_externally(invocation)
        return self.runtime.drive(run)

    def _waiting(self, run_id: str, action: str) -> Invocation:
        store = durable_store(self.runtime.store)
        run = self.runtime.store.get_run(run_id)
        invocation = store.invocation_for_run(run.id)
        if invocation is None or run.status not in _SETTLEABLE:
            raise ActionRefused(
                f"run {run.id} is {run.status.value} at {run.phase.value} and does not wait for "
                f"a durable operation; only a paused:waiting run can be given `{action}`"
            )
        return invocation

    def _cancel_externally(self, invocation: Invocation) -> None:
        store = durable_store(self.runtime.store)
        entry = self.runtime.store.get_ledger_entry(invocation.ledger_id)
        context = InvocationContext(
            invocation_id=invocation.id,
            correlation_key=invocation.correlation_key,
            idempotency_key=entry.idempotency_key,
            timeout_at=invocation.timeout_at,
            token=invocation.token,
        )
        outcome = self.runtime.connectors[invocation.connector].cancel(
            invocation.operation, entry.params, context
        )
        store.record_attempt(invocation.id, AttemptKind.CANCEL, outcome)


def _detail(action: PersonSettlement, actor: str) -> str:
    return f"{SKIPPED_BY}{actor}" if action == "skip" else f"{action} by {actor}"
