"""A loaded workflow script: its source and the manifest the validator extracted from it.

`load_workflow` is the one way the runtime turns a script into something it
can schedule: it validates the script and refuses it (`ScriptRejected`, with
the report) when there is any error, so what runs is always what the
validator read.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from pydantic import BaseModel, ConfigDict, Field

from keep_sdk.errors import ScriptRejected
from keep_sdk.model import HandlerPhase, HostPolicy
from keep_sdk.validator import (
    ConsumerManifest,
    ProducerManifest,
    Report,
    WorkflowManifest,
    validate,
)

if TYPE_CHECKING:
    from collections.abc import Sequence

    from keep_sdk.contract.manifest import Manifest
    from keep_sdk.contract.workflow import HandlerLocation
    from keep_sdk.validator import Rule

__all__ = ["Workflow", "load_workflow"]


class Workflow(BaseModel):
    """A validated script: `source`, where it came from, and its `manifest`."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    source: str
    filename: str | None = None
    manifest: WorkflowManifest
    report: Report = Field(description="The validator's report (warnings only).")

    @property
    def name(self) -> str | None:
        """The workflow's declared `name`, if any."""
        return self.manifest.name

    @property
    def topics(self) -> list[str]:
        """Declared topic names, in declaration order."""
        return list(self.manifest.topics)

    @property
    def producers(self) -> dict[str, ProducerManifest]:
        """Producers by name."""
        return {p.name: p for p in self.manifest.producers}

    @property
    def consumers(self) -> dict[str, ConsumerManifest]:
        """Consumers by name."""
        return {c.name: c for c in self.manifest.consumers}

    def handler(self, name: str, phase: HandlerPhase) -> HandlerLocation:
        """Where the handler `name` (producer, or consumer with `phase`) is in the source.

        Raises `KeyError` when the workflow has no such handler.
        """
        if phase is HandlerPhase.PRODUCER:
            return self.producers[name].handler
        consumer = self.consumers[name]
        return {
            HandlerPhase.PREPARE: consumer.prepare,
            HandlerPhase.MUTATE: consumer.mutate,
            HandlerPhase.NEXT: consumer.next,
        }[phase]

    def function_body(self) -> str:
        """The script as the body of a function that returns the workflow declaration.

        ``export default <value>`` becomes ``return (<value>)``. The keywords
        are padded with spaces, so every character up to the end of the value
        keeps its line and column and errors point into the original script.
        """
        export = self.manifest.default_export
        head_start = export.statement.start_offset
        value_start = export.value.start_offset
        value_end = export.value.end_offset
        head = self.source[head_start:value_start]
        keyword = "return ("
        padding = "".join("\n" if c == "\n" else " " for c in head)
        replacement = keyword + padding[len(keyword) :]
        return (
            self.source[:head_start]
            + replacement
            + self.source[value_start:value_end]
            + ")"
            + self.source[value_end:]
        )


def load_workflow(
    source: str,
    *,
    connectors: Manifest | None = None,
    policy: HostPolicy | None = None,
    filename: str | None = None,
    rules: Sequence[Rule] | None = None,
) -> Workflow:
    """Validate `source` and return the `Workflow` the runtime runs.

    `connectors` and `rules` are passed to `keep_sdk.validator.validate` (see
    there for the defaults); `keep_sdk.load_workflow` passes the installed
    plugins' registries. Raises `ScriptRejected` (its ``report`` is the validator's `Report`) when
    the validator reports any error.
    """
    report = validate(source, connectors=connectors, policy=policy, filename=filename, rules=rules)
    if report.errors or report.workflow is None:
        first = report.errors[0] if report.errors else None
        where = f" First: {first.location()}: [{first.rule}] {first.message}." if first else ""
        count = len(report.errors)
        raise ScriptRejected(
            f"{filename or 'the script'} was rejected by the validator with {count} "
            f"error{'s' if count != 1 else ''}.{where} Run `keep validate` on it for every "
            "problem and how to fix it.",
            report=report,
        )
    return Workflow(source=source, filename=filename, manifest=report.workflow, report=report)
