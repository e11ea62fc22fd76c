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
from keep_sdk.validator.rule import Finding, Related, Rule, RuleMeta
from keep_sdk.validator.rules._support import line_of, why
from keep_sdk.validator.rules.event_title import event_fields, topic_name

__all__ = ["rule"]

META = RuleMeta(
    id="missing-message-id",
    severity=Severity.WARNING,
    description="A producer publishes an event without a stable `messageId`.",
    rationale=why(__doc__),
    messages={
        "missing": "this event to `{topic}` has no `messageId`",
        "in-helper": (
            "this call publishes an event to `{topic}` without `messageId` (in {helpers} at "
            "line {line})"
        ),
    },
    hint=(
        "Add messageId: a stable id of the external item (e.g. `messageId: email.id`), so "
        "re-running the producer publishes each item once."
    ),
)


def check(analysis: Analysis) -> Iterator[Finding]:
    """Producer publishes whose event literal lacks `messageId`: reported at the event, or,
    for a publish in a helper, at the producer's call of the helper (the event related)."""
    for call in analysis.calls:
        if call.method != "publish" or call.handler.phase is not HandlerPhase.PRODUCER:
            continue
        if call.topic is not None:
            topic = call.topic
        else:
            topic = topic_name(analysis, call.arguments[0]) if call.arguments else "?"
        if len(call.arguments) < 2:
            event = call.node
        else:
            fields = event_fields(analysis, call.arguments[1])
            if fields is None or "messageId" in fields:
                continue
            event = call.arguments[1]
        if not call.via:
            yield Finding("missing", event, {"topic": topic}, call.handler)
            continue
        helpers = " → ".join(f"`{helper}`" for helper in call.via)
        arguments = {"topic": topic, "helpers": helpers, "line": line_of(analysis, event)}
        related = (Related(event, f"the event without `messageId`, in {helpers}"),)
        yield Finding("in-helper", call.site, arguments, call.handler, related=related)


rule = Rule(META, check)
