"""`validate`: parse, analyse, run every registered rule, and collect a `Report`."""

from __future__ import annotations

from collections.abc import Sequence

from keep_sdk.contract.manifest import Manifest
from keep_sdk.model import HostPolicy, trusted
from keep_sdk.validator._diagnostics import Diagnostic, RelatedLocation, Report
from keep_sdk.validator.extract import extract_workflow
from keep_sdk.validator.facts import Analysis
from keep_sdk.validator.globals_scan import scan_globals
from keep_sdk.validator.implicit_scan import scan_implicit_code
from keep_sdk.validator.rule import Finding, Related, Rule
from keep_sdk.validator.rules import BUILTIN_RULES, BUILTIN_VOCABULARY
from keep_sdk.validator.scope import module_scope
from keep_sdk.validator.sites import with_call_sites
from keep_sdk.validator.source import SourceText
from keep_sdk.validator.syntax import engine_errors, parser_errors
from keep_sdk.validator.vocabulary import WalkVocabulary
from keep_sdk.validator.walker import walk_handlers

__all__ = ["analyze", "validate"]

_NO_CONNECTORS = Manifest()
_BUILTIN_VOCABULARIES = tuple(r.vocabulary for r in BUILTIN_RULES if r.vocabulary is not None)


def analyze(
    source: str,
    *,
    connectors: Manifest | None = None,
    policy: HostPolicy | None = None,
    filename: str | None = None,
) -> Analysis:
    """Parse `source` and collect every fact the rules read (see `Analysis`).

    `connectors` is what scripts may call (default: none).
    When the script has syntax errors only those are collected.
    """
    return _analyze(source, connectors, policy, filename, BUILTIN_VOCABULARY)


def _analyze(
    source: str,
    connectors: Manifest | None,
    policy: HostPolicy | None,
    filename: str | None,
    vocabulary: WalkVocabulary,
) -> Analysis:
    text = SourceText.parse(source)
    analysis = Analysis(
        source=text,
        connectors=connectors if connectors is not None else _NO_CONNECTORS,
        policy=policy if policy is not None else HostPolicy(),
        filename=filename,
    )
    analysis.syntax = parser_errors(text) or engine_errors(
        text, analysis.policy.sandbox.stack_bytes
    )
    if analysis.syntax:
        return analysis
    module = module_scope(text.root, text.data)
    extraction = extract_workflow(text, module, analysis.policy)
    analysis.manifest = extraction.manifest
    analysis.handlers = extraction.handlers
    analysis.shape_problems = extraction.problems
    analysis.topics = extraction.topics
    analysis.declared_topics = extraction.declared_topics
    scan_globals(analysis)
    scan_implicit_code(analysis)
    walk_handlers(analysis, module, vocabulary)
    analysis.manifest = with_call_sites(analysis)
    return analysis


def validate(
    source: str,
    *,
    connectors: Manifest | None = None,
    policy: HostPolicy | None = None,
    filename: str | None = None,
    rules: Sequence[Rule] | None = None,
) -> Report:
    """Check a workflow script statically and report every problem found.

    The registries are passed in: `connectors` is what scripts may call (default:
    none, so every ``ctx.<connector>`` call is ``unknown-operation``) and `rules`
    the rules to run (default: the built-in catalog). `keep_sdk.validate` passes
    those of the installed plugins, as ``keep validate`` does. `policy` decides
    what the host allows (``mutate_reads="by_id"`` permits read-by-id operations
    in ``mutate``); `filename` is only echoed in the report.
    Never raises for any input string: unreadable scripts get ``syntax-error``
    diagnostics.
    """
    if rules is None:
        rules = BUILTIN_RULES
    return _validate(source, connectors, policy, filename, rules)


def _validate(
    source: str,
    connectors: Manifest | None,
    policy: HostPolicy | None,
    filename: str | None,
    rules: Sequence[Rule],
) -> Report:
    analysis = _analyze(source, connectors, policy, filename, _vocabulary(rules))
    found: list[tuple[Rule, Finding]] = []
    absorbed: set[tuple[str, int, int]] = set()
    for rule in rules:
        for finding in rule.check(analysis):
            found.append((rule, finding))
            for rule_id, node in finding.absorbs:
                absorbed.add((rule_id, node.start_byte, node.end_byte))
    diagnostics: dict[tuple[object, ...], Diagnostic] = {}
    for rule, finding in found:
        if absorbed and (rule.meta.id, *finding.byte_range()) in absorbed:
            continue
        diagnostic = _diagnostic(rule, finding, analysis)
        key = (
            diagnostic.rule,
            diagnostic.line,
            diagnostic.column,
            diagnostic.end_line,
            diagnostic.end_column,
            diagnostic.message,
        )
        diagnostics.setdefault(key, diagnostic)
    ordered = sorted(
        diagnostics.values(), key=lambda d: (d.line, d.column, d.rule, d.end_line, d.end_column)
    )
    return trusted(
        Report,
        {
            "format_version": 2,
            "file": filename,
            "diagnostics": ordered,
            "workflow": analysis.manifest,
        },
    )


def _vocabulary(rules: Sequence[Rule]) -> WalkVocabulary:
    """The built-in rules' vocabulary, with what any other rule in `rules` adds."""
    extra = [
        rule.vocabulary
        for rule in rules
        if rule.vocabulary is not None and rule.vocabulary not in _BUILTIN_VOCABULARIES
    ]
    return BUILTIN_VOCABULARY.merge(*extra) if extra else BUILTIN_VOCABULARY


def _diagnostic(rule: Rule, finding: Finding, analysis: Analysis) -> Diagnostic:
    source = analysis.source
    node = finding.node
    if node is not None and finding.start_byte is None and source.ascii:
        line, column = source.node_position(node)
        end_line, end_column = source.node_position(node, end=True)
    else:
        start, end = finding.byte_range()
        line, column = source.position(start)
        end_line, end_column = source.position(max(start, end))
    message, hint = rule.meta.render(finding.message_id, finding.arguments)
    handler = finding.handler
    if handler is None and finding.node is not None:
        handler = analysis.handler_at(finding.node)
    if (end_line, end_column) <= (line, column):
        end_line, end_column = line, column + 1
    related: list[RelatedLocation] = []
    for item in finding.related:
        location = _related(item, analysis)
        if (location.line, location.column, location.end_line, location.end_column) != (
            line,
            column,
            end_line,
            end_column,
        ):
            related.append(location)
    return trusted(
        Diagnostic,
        {
            "rule": rule.meta.id,
            "severity": rule.meta.severity,
            "message": message,
            "hint": hint,
            "file": analysis.filename,
            "line": line,
            "column": column,
            "end_line": end_line,
            "end_column": end_column,
            "handler": handler.label if handler is not None else None,
            "phase": handler.phase if handler is not None else None,
            "related": related,
        },
    )


def _related(item: Related, analysis: Analysis) -> RelatedLocation:
    source = analysis.source
    line, column = source.position(item.node.start_byte)
    end_line, end_column = source.position(max(item.node.start_byte, item.node.end_byte))
    if (end_line, end_column) <= (line, column):
        end_line, end_column = line, column + 1
    return trusted(
        RelatedLocation,
        {
            "message": item.message,
            "line": line,
            "column": column,
            "end_line": end_line,
            "end_column": end_column,
        },
    )
