"""Build small workflows around handler bodies and check what a rule reports on them.

A case marks each line where its rule must report with ``// here``; the
check requires the rule's diagnostics on exactly those lines.
"""

from __future__ import annotations

from dataclasses import dataclass

from keep_sdk import validate
from keep_sdk.model import HostPolicy
from keep_sdk.validator import Report

MARK = "// here"

DEFAULT_PREPARE = "return { reservations: [], data: {} };"


def workflow(
    *,
    producer: str | None = None,
    prepare: str = DEFAULT_PREPARE,
    mutate: str = "",
    next_: str = "",
    before: str = "",
    topics: str = '"in": {}, "out": {}, "other": {}',
    subscribe: str = '["in"]',
    publishes: str | None = None,
) -> str:
    """A workflow with one consumer (and a producer when `producer` is given)."""
    producers = (
        f"  producers: {{\n    poll: async (ctx, state) => {{\n{producer}\n    }},\n  }},\n"
        if producer is not None
        else ""
    )
    publishes_line = f"      publishes: {publishes},\n" if publishes is not None else ""
    return (
        f"{before}\n"
        "export default Keep.workflow({\n"
        '  name: "case",\n'
        f"  topics: {{ {topics} }},\n"
        f"{producers}"
        "  consumers: {\n"
        "    work: Keep.consumer({\n"
        f"      subscribe: {subscribe},\n"
        f"{publishes_line}"
        f"      async prepare(ctx, state) {{\n{prepare}\n      }},\n"
        f"      async mutate(ctx, prepared) {{\n{mutate}\n      }},\n"
        f"      async next(ctx, prepared, mutationResult) {{\n{next_}\n      }},\n"
        "    }),\n"
        "  },\n"
        "});\n"
    )


@dataclass(frozen=True)
class Case:
    """A script and the policy to validate it with; `id` names it in test output."""

    id: str
    source: str
    policy: HostPolicy | None = None

    def report(self) -> Report:
        return validate(self.source, policy=self.policy, filename=f"{self.id}.js")


def marked_lines(source: str) -> set[int]:
    return {n for n, line in enumerate(source.split("\n"), start=1) if MARK in line}


def describe(report: Report) -> str:
    return "\n".join(f"{d.line}:{d.column} {d.rule}: {d.message}" for d in report.diagnostics)


def assert_reports(rule: str, case: Case) -> None:
    """`rule` reports on exactly the marked lines, and the script has no syntax error."""
    report = case.report()
    found = {d.line for d in report.diagnostics if d.rule == rule}
    expected = marked_lines(case.source)
    assert expected, f"case {case.id} marks no line with {MARK!r}"
    assert "syntax-error" not in report.rules() or rule == "syntax-error", describe(report)
    assert found == expected, f"{rule} on lines {sorted(found)}, expected {sorted(expected)}:\n" + (
        describe(report)
    )


def assert_silent(rule: str, case: Case) -> None:
    """`rule` reports nothing and the script has no syntax error."""
    report = case.report()
    assert "syntax-error" not in report.rules() or rule == "syntax-error", describe(report)
    assert rule not in report.rules(), describe(report)
