"""unknown-operation: ``ctx.<connector>.<operation>`` that no registered connector declares.

What it does: resolves every connector access through aliases
(``const {sheets} = ctx``, ``const send = ctx.gmail.send``) and checks the
connector and operation names against the connector manifest. An unknown
connector's message says which keep.toml the manifest's connectors came from
(or where none was found), when the manifest knows.

Why is this bad? The host only offers the operations connectors declare: the
call fails at run time with a logic error, after the run has started.
"""

from __future__ import annotations

from collections.abc import Iterator

from keep_sdk.validator._diagnostics import Severity
from keep_sdk.validator.facts import Analysis
from keep_sdk.validator.rule import Finding, Rule, RuleMeta
from keep_sdk.validator.rules._support import suggestion, why

__all__ = ["rule"]

_CTX_MEMBERS = ("publish", "peek", "getByIds")

META = RuleMeta(
    id="unknown-operation",
    severity=Severity.ERROR,
    description="A connector or operation is used that no registered connector declares.",
    rationale=why(__doc__),
    messages={
        "connector": "`ctx.{connector}` is not a connector{suggestion}{origin}",
        "operation": "connector `{connector}` has no operation `{operation}`{suggestion}",
        "called": "`ctx.{connector}` is a connector, not an operation; it cannot be called",
    },
    hint="Use only what the connectors offer: {offered}.",
    hints={
        "connector": (
            "Use one of the registered connectors ({offered}) or one of ctx.publish, ctx.peek, "
            "ctx.getByIds; run `keep connectors` to list every operation."
        ),
        "operation": "Call one of the operations `{connector}` offers: {offered}.",
        "called": "Call one of its operations instead: {offered}.",
    },
)


def check(analysis: Analysis) -> Iterator[Finding]:
    """Each unknown connector or operation the walk met."""
    connectors = {c.name: c for c in analysis.connectors.connectors}
    for use in analysis.unknown_operations:
        connector = connectors.get(use.connector)
        if connector is None:
            names = sorted(connectors)
            yield Finding(
                "connector",
                use.node,
                {
                    "connector": use.connector,
                    "suggestion": suggestion(use.connector, [*names, *_CTX_MEMBERS]),
                    "origin": f"; {origin}" if (origin := analysis.connectors.origin) else "",
                    "offered": ", ".join(f"`{n}`" for n in names) or "none",
                },
                use.handler,
            )
            continue
        operations = [op.name for op in connector.operations]
        offered = ", ".join(f"`ctx.{connector.name}.{name}`" for name in operations)
        if use.operation is None:
            yield Finding(
                "called",
                use.node,
                {"connector": use.connector, "offered": offered},
                use.handler,
            )
            continue
        yield Finding(
            "operation",
            use.node,
            {
                "connector": use.connector,
                "operation": use.operation,
                "suggestion": suggestion(use.operation, operations),
                "offered": offered,
            },
            use.handler,
        )


rule = Rule(META, check)
