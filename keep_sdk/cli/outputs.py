"""The `--json` output of every command, as pydantic models with published JSON Schemas.

Every key is camelCase, as in the contract. ``keep schema --output COMMAND`` prints
the schema of COMMAND's `--json` output; `OUTPUTS` maps each command to its type.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter
from pydantic.alias_generators import to_camel

from keep_sdk.cli.remedies import command
from keep_sdk.contract.manifest import Manifest
from keep_sdk.model import Event, LedgerEntry, RunRecord, UtcDatetime
from keep_sdk.scheduler import Activity
from keep_sdk.status import StatusReport, Waiting, WorkflowStatus
from keep_sdk.stores import PublishResult, WorkflowRecord
from keep_sdk.stores.sql import AcceptedRollback
from keep_sdk.validator import ReportSet

if TYPE_CHECKING:
    from keep_sdk.conformance.store_suite import SuiteReport

__all__ = [
    "OUTPUTS",
    "DeployOutput",
    "RollbackOutput",
    "RunOutput",
    "StatusOutput",
    "SuiteOutput",
    "WorkflowOutput",
    "output_schema",
]


class _Output(BaseModel):
    model_config = ConfigDict(
        alias_generator=to_camel, populate_by_name=True, frozen=True, extra="forbid"
    )


class DeployOutput(_Output):
    """``keep deploy --json``: what was deployed and what the workflow may do now."""

    workflow: str
    version: int
    deployed: bool = Field(description="False when the script was already the current version.")
    store: str
    granted: list[str] = Field(description="Permissions granted by this command, in given order.")
    grants: list[str] = Field(description="Every permission the workflow holds now, sorted.")
    needed: list[str] = Field(description="Permissions the script's operations need, sorted.")
    missing: list[str] = Field(description="Needed permissions not granted yet, sorted.")


class WaitingOutput(Waiting):
    """What waits, with what a person can do spelled as complete ``keep`` commands."""

    commands: list[str] = Field(
        description="Each of `remedies` as a command for this store, in the same order."
    )


class WorkflowStatusOutput(WorkflowStatus):
    """One workflow of ``keep status --json``."""

    waiting: Sequence[WaitingOutput]


class StatusOutput(StatusReport):
    """``keep status --json``: the status read model, each waiting item with its commands."""

    workflows: Sequence[WorkflowStatusOutput]

    @classmethod
    def of(cls, report: StatusReport) -> StatusOutput:
        """`report` with the commands for its store added to every waiting item."""
        return cls(
            store=report.store,
            workflows=[_workflow(workflow, report.store) for workflow in report.workflows],
        )


def _workflow(workflow: WorkflowStatus, store_url: str) -> WorkflowStatusOutput:
    waiting = [_waiting(item, store_url) for item in workflow.waiting]
    return WorkflowStatusOutput(**{**dict(workflow), "waiting": waiting})


def _waiting(item: Waiting, store_url: str) -> WaitingOutput:
    commands = [command(remedy, store_url=store_url) for remedy in item.remedies]
    return WaitingOutput(**dict(item), commands=commands)


class RunOutput(_Output):
    """``keep run --json``: what was deployed, what the scheduler did, and the status after."""

    workflow: str
    version: int
    deployed: bool
    activities: list[Activity]
    status: StatusOutput


class WorkflowOutput(_Output):
    """``keep revoke --json``: the workflow after the change."""

    name: str
    version: int
    paused: bool
    grants: list[str]
    created_at: UtcDatetime
    updated_at: UtcDatetime

    @classmethod
    def of(cls, record: WorkflowRecord) -> WorkflowOutput:
        """The output for a stored workflow record."""
        return cls.model_validate(record.model_dump())


class _Area(_Output):
    area: str
    passed: int
    failed: int
    skipped: int


class _CapabilityRow(_Output):
    capability: str
    status: str = Field(description="passed, failed, not declared or not run.")
    declared: bool
    required: bool
    passed: int
    failed: int
    skipped: int


class _Certificate(_Output):
    store: str
    capabilities: list[_CapabilityRow] = Field(
        description="core (what every store must do), then each store capability."
    )


class SuiteOutput(_Output):
    """``keep conformance --json``: the certificate (each capability passed, failed or not
    declared), the store suite's outcome by area, and each failure."""

    store: str
    certificate: _Certificate
    areas: list[_Area]
    failures: dict[str, str]
    exit_code: int

    @classmethod
    def of(cls, report: SuiteReport) -> SuiteOutput:
        """The output for a suite report."""
        return cls.model_validate(report.model_dump())


class RollbackOutput(_Output):
    """``keep accept-rollback --json``: the commit mark before and after, and how many
    committed mutation intents the accepted database lost."""

    store: str
    database: str
    mark_before: int | None
    mark_after: int
    forgotten: int

    @classmethod
    def of(cls, accepted: AcceptedRollback) -> RollbackOutput:
        """The output for an accepted rollback."""
        return cls(**accepted.model_dump(), forgotten=accepted.forgotten)


OUTPUTS: dict[str, Any] = {
    "accept-rollback": RollbackOutput,
    "conformance": SuiteOutput,
    "connectors": Manifest,
    "deploy": DeployOutput,
    "events": list[Event],
    "ledger": list[LedgerEntry],
    "publish": PublishResult,
    "resolve": RunRecord,
    "revoke": WorkflowOutput,
    "run": RunOutput,
    "runs": list[RunRecord],
    "skip": Event,
    "status": StatusOutput,
    "validate": ReportSet,
}
"""Command → the type of its `--json` output (``keep validate``: ``--format json``, also
published as docs/validator-report.schema.json)."""


def output_schema(command: str) -> dict[str, Any]:
    """The JSON Schema of `command`'s `--json` output, by alias. `KeyError` if it has none."""
    schema: dict[str, Any] = TypeAdapter(OUTPUTS[command]).json_schema(
        by_alias=True, mode="serialization"
    )
    schema.setdefault("title", f"keep {command} --json")
    return schema
