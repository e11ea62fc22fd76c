"""Query strings of the pages and the API, checked by pydantic (a bad one is a 400)."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from keep_sdk.model import EventStatus, LedgerStatus, RunStatus

__all__ = ["EventQuery", "FlowQuery", "LedgerQuery", "RunQuery", "StatusQuery"]

_Id = Field(default=None, min_length=1, max_length=200)


class _Query(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    before: str | None = Field(default=None, min_length=1, max_length=64)
    limit: int | None = Field(default=None, ge=1, le=500)


class StatusQuery(BaseModel):
    """``/api/status``: as ``keep status --json``."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    workflow: str | None = _Id
    limit: int = Field(default=10, ge=1, le=500)


class FlowQuery(_Query):
    """One workflow's inputs → outputs."""


class EventQuery(_Query):
    """Events of a workflow, optionally of one topic and status."""

    workflow: str | None = _Id
    topic: str | None = _Id
    status: EventStatus | None = None


class RunQuery(_Query):
    """Runs, optionally of one workflow and status."""

    workflow: str | None = _Id
    status: RunStatus | None = None


class LedgerQuery(_Query):
    """Ledger entries, optionally of one workflow and status."""

    workflow: str | None = _Id
    status: LedgerStatus | None = None
