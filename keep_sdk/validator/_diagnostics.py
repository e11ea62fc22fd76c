"""What the validator reports: `Diagnostic` and `Report` (the JSON output's schema)."""

from __future__ import annotations

from enum import StrEnum
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field
from pydantic.alias_generators import to_camel

from keep_sdk.contract.workflow import WorkflowManifest
from keep_sdk.model import HandlerPhase

__all__ = ["Diagnostic", "RelatedLocation", "Report", "ReportSet", "Severity"]

_FORMAT_VERSION: Literal[2] = 2


class Severity(StrEnum):
    """How bad a diagnostic is. Only errors make `keep validate` fail."""

    ERROR = "error"
    WARNING = "warning"


class _Frozen(BaseModel):
    model_config = ConfigDict(
        frozen=True, extra="forbid", alias_generator=to_camel, populate_by_name=True
    )


class RelatedLocation(_Frozen):
    """Another place in the script that belongs to a diagnostic's one cause.

    The first mutation that a second one follows, the line inside a helper
    that a call in the handler reaches, code that the misplaced mutation
    keeps from running. Lines and columns as in `Diagnostic`.
    """

    message: str = Field(description="What this place is, in a few words.")
    line: int = Field(ge=1)
    column: int = Field(ge=1)
    end_line: int = Field(ge=1)
    end_column: int = Field(ge=1)


class Diagnostic(_Frozen):
    """One problem found in a script.

    Lines and columns are 1-based; columns count Unicode code points and
    `end_column` is exclusive (the column just after the range).
    """

    rule: str = Field(description="Rule id, e.g. `code-after-mutation`.")
    severity: Severity
    message: str = Field(description="What is wrong, in one sentence.")
    hint: str = Field(description="How to fix it, written for an LLM repairing the script.")
    file: str | None = Field(default=None, description="Script path as given, or None.")
    line: int = Field(ge=1)
    column: int = Field(ge=1)
    end_line: int = Field(ge=1)
    end_column: int = Field(ge=1)
    handler: str | None = Field(
        default=None,
        description="Where it was found: `producers.<name>` or `consumers.<name>.<phase>`.",
    )
    phase: HandlerPhase | None = Field(default=None, description="Phase of that handler.")
    related: list[RelatedLocation] = Field(
        default_factory=list,
        description="Other places of the same cause, in source order; the diagnostic's own "
        "location is the one to change.",
    )

    def location(self) -> str:
        """``file:line:column`` as compilers print it."""
        return f"{self.file or '<script>'}:{self.line}:{self.column}"


class Report(_Frozen):
    """Everything the validator found in one script.

    `workflow` is the manifest the runtime uses (topics, producers, consumers,
    handler locations); it is None when the script's shape could not be read.
    """

    format_version: Literal[2] = Field(
        default=_FORMAT_VERSION,
        description="Bumped on incompatible changes (2: camelCase keys, related locations).",
    )
    file: str | None = None
    diagnostics: list[Diagnostic] = Field(default_factory=list)
    workflow: WorkflowManifest | None = None

    @property
    def errors(self) -> list[Diagnostic]:
        """The diagnostics of severity error."""
        return [d for d in self.diagnostics if d.severity is Severity.ERROR]

    @property
    def warnings(self) -> list[Diagnostic]:
        """The diagnostics of severity warning."""
        return [d for d in self.diagnostics if d.severity is Severity.WARNING]

    @property
    def ok(self) -> bool:
        """True when there is no error (warnings allowed)."""
        return not self.errors

    def rules(self) -> set[str]:
        """The ids of the rules that reported something."""
        return {d.rule for d in self.diagnostics}


class ReportSet(_Frozen):
    """The JSON output of ``keep validate``: one report per script."""

    format_version: Literal[2] = Field(
        default=_FORMAT_VERSION,
        description="Bumped on incompatible changes (2: camelCase keys, related locations).",
    )
    reports: list[Report] = Field(default_factory=list)
    error_count: int = Field(ge=0)
    warning_count: int = Field(ge=0)

    @classmethod
    def of(cls, reports: list[Report]) -> ReportSet:
        """Collect `reports` and count their errors and warnings."""
        return cls(
            reports=reports,
            error_count=sum(len(r.errors) for r in reports),
            warning_count=sum(len(r.warnings) for r in reports),
        )

    @classmethod
    def json_schema(cls) -> dict[str, Any]:
        """The published JSON Schema of this output."""
        schema = cls.model_json_schema()
        schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
        schema["title"] = "keep validate report"
        return schema
