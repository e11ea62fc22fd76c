"""missing-message-id: a producer publishes an event without ``messageId``.

What it does: warns about ``ctx.publish(topic, {...})`` in producers (and the
helpers they call) whose event object has no ``messageId``.

Why is this bad? Producers re-run freely: after a crash, a failure, or on
every schedule tick they re-poll the same external data. Publishing is
deduplicated by ``messageId``; without a stable id taken from the external
item, every re-run publishes the same item again as a new event.
"""

from __future__ import annotations

from collections.abc import Iterator

from keep_sdk.model import HandlerPhase
from keep_sdk.validator._diagnostics import Severity
from keep_sdk.validator.facts import Analysis
from keep_sdk.validator.rule import Finding, Rule, RuleMeta
from keep_sdk.validator.rules._support import why
from keep_sdk.validator.rules.event_title import event_fields, topic_name

__all__ = ["rule"]

META = RuleMeta(
    id="missing-message-id",
    severity=Severity.WARNING,
    description="A producer publishes an event without a stable `messageId`.",
    rationale=why(__doc__),
    messages={"missing": "this event to `{topic}` has no `messageId`"},
    hint=(
        "Add messageId: a stable id of the external item (e.g. `messageId: email.id`), so "
        "re-running the producer publishes each item once."
    ),
)


def check(analysis: Analysis) -> Iterator[Finding]:
    """Producer publishes whose event literal lacks `messageId`."""
    for call in analysis.calls:
        if call.method != "publish" or call.handler.phase is not HandlerPhase.PRODUCER:
            continue
        topic = topic_name(analysis, call.arguments[0]) if call.arguments else "?"
        if len(call.arguments) < 2:
            yield Finding("missing", call.node, {"topic": topic}, call.handler)
            continue
        fields = event_fields(analysis, call.arguments[1])
        if fields is not None and "messageId" not in fields:
            yield Finding("missing", call.arguments[1], {"topic": topic}, call.handler)


rule = Rule(META, check)
