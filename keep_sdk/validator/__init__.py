"""Static validation of workflow scripts: rules, reports and the workflow manifest.

`validate` checks a script and returns a `Report`; `analyze` returns the
facts the rules read, for plugin rules and tools. Rules are `Rule` objects
registered through the ``register_rules`` plugin hook.
"""

from keep_sdk.contract.workflow import (
    ConsumerManifest,
    CronSchedule,
    DefaultExport,
    HandlerLocation,
    IntervalSchedule,
    ProducerManifest,
    Schedule,
    Span,
    WorkflowManifest,
)
from keep_sdk.validator._diagnostics import (
    Diagnostic,
    RelatedLocation,
    Report,
    ReportSet,
    Severity,
)
from keep_sdk.validator._render import render_json, render_sarif, render_text, sarif_log
from keep_sdk.validator.engine import analyze, validate
from keep_sdk.validator.facts import (
    Analysis,
    CapabilityCall,
    CodeAfterMutation,
    DynamicCapability,
    GlobalUse,
    GlobalUseKind,
    Handler,
    ShapeProblem,
    SharedStateAccess,
    SyntaxProblem,
    TopicUse,
    UnknownOperationUse,
)
from keep_sdk.validator.rule import Finding, Related, Rule, RuleMeta

__all__ = [
    "Analysis",
    "CapabilityCall",
    "CodeAfterMutation",
    "ConsumerManifest",
    "CronSchedule",
    "DefaultExport",
    "Diagnostic",
    "DynamicCapability",
    "Finding",
    "GlobalUse",
    "GlobalUseKind",
    "Handler",
    "HandlerLocation",
    "IntervalSchedule",
    "ProducerManifest",
    "Related",
    "RelatedLocation",
    "Report",
    "ReportSet",
    "Rule",
    "RuleMeta",
    "Schedule",
    "Severity",
    "ShapeProblem",
    "SharedStateAccess",
    "Span",
    "SyntaxProblem",
    "TopicUse",
    "UnknownOperationUse",
    "WorkflowManifest",
    "analyze",
    "render_json",
    "render_sarif",
    "render_text",
    "sarif_log",
    "validate",
]
