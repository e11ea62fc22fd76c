"""Render reports as compiler-style text, JSON (`ReportSet`) and SARIF 2.1.0."""

from __future__ import annotations

import re
import string
from collections.abc import Mapping, Sequence
from pathlib import PurePath
from typing import Any
from urllib.parse import quote

from keep_sdk.validator._diagnostics import Diagnostic, Report, ReportSet, Severity
from keep_sdk.validator.rule import Rule

__all__ = ["render_json", "render_sarif", "render_text", "sarif_log"]

SARIF_SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"
TOOL_NAME = "keep-validate"
TOOL_URI = "https://pypi.org/project/keep-sdk/"


def render_text(report: Report, source: str) -> str:
    """``file:line:col: severity[rule] message``, the source line with carets, and the hint."""
    lines = source.split("\n")
    blocks: list[str] = []
    for diagnostic in report.diagnostics:
        blocks.append(_text_block(diagnostic, lines))
    return "\n".join(blocks)


def _text_block(diagnostic: Diagnostic, lines: list[str]) -> str:
    where = f" (in {diagnostic.handler})" if diagnostic.handler else ""
    header = (
        f"{diagnostic.location()}: {diagnostic.severity.value}[{diagnostic.rule}] "
        f"{diagnostic.message}{where}"
    )
    out = [header]
    index = diagnostic.line - 1
    if 0 <= index < len(lines):
        text = lines[index].rstrip("\r")
        shown = text if len(text) <= 200 else text[:200]
        number = str(diagnostic.line)
        gutter = " " * len(number)
        start = min(diagnostic.column - 1, len(shown))
        if diagnostic.end_line == diagnostic.line:
            stop = min(max(diagnostic.end_column - 1, start + 1), max(len(shown), start + 1))
        else:
            stop = max(len(shown), start + 1)
        padding = "".join("\t" if c == "\t" else " " for c in shown[:start])
        out.append(f"  {number} | {shown}")
        out.append(f"  {gutter} | {padding}{'^' * (stop - start)}")
    for related in diagnostic.related:
        out.append(
            f"  note: {diagnostic.file or '<script>'}:{related.line}:{related.column}: "
            f"{related.message}"
        )
    out.append(f"  hint: {diagnostic.hint}")
    return "\n".join(out)


def render_json(reports: Sequence[Report]) -> str:
    """The JSON output: a `ReportSet` with camelCase keys (its schema is
    ``ReportSet.json_schema()``)."""
    return ReportSet.of(list(reports)).model_dump_json(indent=2, by_alias=True)


class _Placeholders(dict[str, str]):
    def __missing__(self, key: str) -> str:
        return f"<{key}>"


def _general(template: str) -> str:
    return string.Formatter().vformat(template, (), _Placeholders())


def _camel(rule_id: str) -> str:
    return "".join(part.capitalize() for part in rule_id.split("-"))


def _level(severity: Severity) -> str:
    return "error" if severity is Severity.ERROR else "warning"


def _uri(file: str | None) -> str:
    if not file or file == "-":
        return "stdin"
    return quote(PurePath(file).as_posix(), safe="/:._-~")


def _rule_descriptor(rule: Rule) -> dict[str, Any]:
    meta = rule.meta
    hint = _general(meta.hint)
    why = f"\n\nWhy: {meta.rationale}" if meta.rationale else ""
    return {
        "id": meta.id,
        "name": _camel(meta.id),
        "shortDescription": {"text": meta.description},
        "fullDescription": {"text": f"{meta.description}{why}"},
        "help": {
            "text": (
                f"{meta.description}{why}\n\nHow to fix: {hint}\n\nDocs: docs/rules/{meta.id}.md"
            ),
            "markdown": (
                f"**{meta.description}**{why}\n\n**How to fix:** {hint}\n\n"
                f"See `docs/rules/{meta.id}.md`."
            ),
        },
        "defaultConfiguration": {"level": _level(meta.severity)},
        "properties": {"tags": ["keep", meta.severity.value]},
    }


def sarif_log(
    reports: Sequence[Report], rules: Sequence[Rule], *, version: str = "0"
) -> dict[str, Any]:
    """A SARIF 2.1.0 log with one run: every rule in ``tool.driver.rules`` and every result."""
    descriptors = [_rule_descriptor(rule) for rule in rules]
    index: Mapping[str, int] = {rule.meta.id: i for i, rule in enumerate(rules)}
    results: list[dict[str, Any]] = []
    artifacts: list[dict[str, Any]] = []
    artifact_index: dict[str, int] = {}
    for report in reports:
        uri = _uri(report.file)
        if uri not in artifact_index:
            artifact_index[uri] = len(artifacts)
            artifacts.append({"location": {"uri": uri}, "sourceLanguage": "javascript"})
        for diagnostic in report.diagnostics:
            result: dict[str, Any] = {
                "ruleId": diagnostic.rule,
                "level": _level(diagnostic.severity),
                "message": {"text": diagnostic.message},
                "locations": [
                    {
                        "physicalLocation": {
                            "artifactLocation": {"uri": uri, "index": artifact_index[uri]},
                            "region": {
                                "startLine": diagnostic.line,
                                "startColumn": diagnostic.column,
                                "endLine": diagnostic.end_line,
                                "endColumn": diagnostic.end_column,
                            },
                        }
                    }
                ],
                "properties": {
                    "hint": diagnostic.hint,
                    "handler": diagnostic.handler,
                    "phase": diagnostic.phase.value if diagnostic.phase else None,
                },
            }
            if diagnostic.related:
                result["relatedLocations"] = [
                    {
                        "id": number,
                        "physicalLocation": {
                            "artifactLocation": {"uri": uri, "index": artifact_index[uri]},
                            "region": {
                                "startLine": related.line,
                                "startColumn": related.column,
                                "endLine": related.end_line,
                                "endColumn": related.end_column,
                            },
                        },
                        "message": {"text": related.message},
                    }
                    for number, related in enumerate(diagnostic.related)
                ]
            if diagnostic.rule in index:
                result["ruleIndex"] = index[diagnostic.rule]
            results.append(result)
    return {
        "$schema": SARIF_SCHEMA,
        "version": "2.1.0",
        "runs": [
            {
                "tool": {
                    "driver": {
                        "name": TOOL_NAME,
                        "informationUri": TOOL_URI,
                        "version": version,
                        "semanticVersion": version
                        if re.match(r"^\d+\.\d+\.\d+", version)
                        else None,
                        "rules": descriptors,
                    }
                },
                "columnKind": "unicodeCodePoints",
                "artifacts": artifacts,
                "results": results,
            }
        ],
    }


def render_sarif(reports: Sequence[Report], rules: Sequence[Rule], *, version: str = "0") -> str:
    """`sarif_log` as indented JSON."""
    import json

    log = sarif_log(reports, rules, version=version)
    driver = log["runs"][0]["tool"]["driver"]
    if driver["semanticVersion"] is None:
        del driver["semanticVersion"]
    return json.dumps(log, indent=2)
