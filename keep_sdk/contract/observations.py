"""What the `observe` hook is told: run, ledger and escalation changes."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field

from keep_sdk.model import Escalation, LedgerEntry, RunRecord

__all__ = ["Escalated", "LedgerChanged", "Observation", "RunChanged"]


class _Observed(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class RunChanged(_Observed):
    """A run was created or its status or phase changed. `previous` is None on creation."""

    kind: Literal["run"] = "run"
    run: RunRecord
    previous: RunRecord | None = None


class LedgerChanged(_Observed):
    """A ledger entry was written or changed status. `previous` is None on creation."""

    kind: Literal["ledger"] = "ledger"
    entry: LedgerEntry
    previous: LedgerEntry | None = None


class Escalated(_Observed):
    """A run now waits for a person."""

    kind: Literal["escalation"] = "escalation"
    escalation: Escalation


Observation = Annotated[RunChanged | LedgerChanged | Escalated, Field(discriminator="kind")]
