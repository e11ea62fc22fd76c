"""A person's actions on a run that waits for a durable operation: cancel, skip, supply.

`DurableActions` is part of `PersonActions`. Each action is audited by the
store's `resolve_invocation` in the transaction that settles the invocation,
and the run then continues in this process (``next`` and the commit), so the
caller holds the workflow's lease (the CLI does).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from pydantic import JsonValue

from keep_sdk.contract.durable import AttemptKind, Invocation, InvocationContext
from keep_sdk.errors import ActionRefused
from keep_sdk.model import RunRecord, RunStatus
from keep_sdk.runtime.durable import durable_store
from keep_sdk.stores import PersonSettlement

if TYPE_CHECKING:
    from keep_sdk.runtime.engine import Runtime

__all__ = ["DurableActions"]

_SETTLEABLE = (RunStatus.PAUSED_WAITING,)


class DurableActions:
    """Cancel, skip or supply the result of a run's durable operation."""

    runtime: Runtime

    def cancel(self, run_id: str, *, actor: str, reason: str | None = None) -> RunRecord:
        """Cancel the run's waiting durable operation and finish the run.

        The invocation becomes ``cancelled`` (a later notification is recorded and
        changes nothing), the connector's ``cancel`` is called best-effort (its
        outcome is an attempt record), ``next`` runs with ``{status: "skipped"}``
        and the run commits; its reserved events become ``skipped``.
        """
        invocation = self._waiting(run_id, "cancel")
        detail = f"cancelled by {actor}" + (f": {reason}" if reason else "")
        _, run = durable_store(self.runtime.store).resolve_invocation(
            invocation.id, "cancel", actor=actor, detail=detail
        )
        self._cancel_externally(invocation)
        return self.runtime.drive(run)

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
            invocation.id, action, actor=actor, result=result, detail=f"{action} by {actor}"
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
