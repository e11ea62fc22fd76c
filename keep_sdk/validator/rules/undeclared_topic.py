"""undeclared-topic: a topic name that the workflow's ``topics`` does not declare.

What it does: checks every topic named in ``subscribe``, ``publishes``,
``ctx.publish``, ``ctx.peek``, ``ctx.getByIds`` and reservations against the
keys of ``topics``; a publish from a handler that declares ``publishes`` must
also name one of those topics.

Why is this bad? Topics are the only channel between handlers. A misspelt
topic is a publish the host refuses at run time, or a consumer that waits
forever for events nobody produces.
"""

from __future__ import annotations

from collections.abc import Iterator

from keep_sdk.validator._diagnostics import Severity
from keep_sdk.validator.facts import Analysis
from keep_sdk.validator.rule import Finding, Rule, RuleMeta
from keep_sdk.validator.rules._support import suggestion, why

__all__ = ["rule"]

META = RuleMeta(
    id="undeclared-topic",
    severity=Severity.ERROR,
    description="A topic is used that the workflow's `topics` does not declare.",
    rationale=why(__doc__),
    messages={
        "undeclared": "topic `{topic}` is not declared in `topics`{suggestion}",
        "not-in-publishes": (
            "`{handler}` publishes to `{topic}`, which is not in its `publishes` list"
        ),
    },
    hint=(
        'Declare the topic in `topics` (topics: {{ "{topic}": {{}} }}) or use one of the '
        "declared topics: {declared}."
    ),
    hints={
        "not-in-publishes": (
            'Add "{topic}" to the `publishes` list of {handler}, or publish to one of: {allowed}.'
        ),
    },
)


def check(analysis: Analysis) -> Iterator[Finding]:
    """Topic uses whose name is a constant missing from `topics` (or from `publishes`)."""
    declared = analysis.declared_topics
    if declared is None:
        return
    listed = ", ".join(f"`{t}`" for t in sorted(declared)) or "none yet"
    for use in analysis.topics:
        if use.topic is None:
            continue
        if use.topic not in declared:
            yield Finding(
                "undeclared",
                use.node,
                {
                    "topic": use.topic,
                    "suggestion": suggestion(use.topic, declared),
                    "declared": listed,
                },
                use.handler,
            )
            continue
        handler = use.handler
        if (
            use.via == "publish"
            and handler is not None
            and handler.publishes is not None
            and use.topic not in handler.publishes
        ):
            allowed = ", ".join(f"`{t}`" for t in handler.publishes) or "none"
            owner = handler.label.rsplit(".", 1)[0] if handler.consumer else handler.label
            yield Finding(
                "not-in-publishes",
                use.node,
                {"topic": use.topic, "handler": owner, "allowed": allowed},
                handler,
            )


rule = Rule(META, check)
