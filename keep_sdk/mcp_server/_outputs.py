"""The structured answers of the tools that have no model of their own elsewhere."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from keep_sdk.cases import CaseResult
from keep_sdk.contract.manifest import ConnectorManifest

__all__ = ["CaseRun", "ConnectorListing", "DeployOutcome"]


class _Out(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class ConnectorListing(_Out):
    """Every connector a script may call: operations, kinds, permissions, argument schemas."""

    connectors: list[ConnectorManifest]
    results_declared: bool = Field(
        default=False,
        description="Whether connectors declare result schemas (none does yet: results are "
        "any JSON value; the operation descriptions say what they hold).",
    )


class CaseRun(_Out):
    """How the cases of one ``*.keep.yaml`` file went."""

    file: str
    ok: bool = Field(description="Every case passed.")
    passed: int = Field(ge=0)
    failed: int = Field(ge=0)
    results: list[CaseResult]
    report: str = Field(description="The mismatches of the failed cases, as text.")


class DeployOutcome(_Out):
    """What the deploy tool did: the version, and the permissions still to be granted."""

    workflow: str
    version: int = Field(ge=1)
    deployed: bool = Field(description="False when the script is the current version.")
    store: str
    grants: list[str] = Field(description="Permissions the workflow holds.")
    needed: list[str] = Field(description="Permissions of the operations the script calls.")
    missing: list[str] = Field(
        description="Needed and not held: a person grants them (keep grant, the console)."
    )
