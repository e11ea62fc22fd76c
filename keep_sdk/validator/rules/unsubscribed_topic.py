"""unsubscribed-topic: a consumer reads or reserves events of a topic it does not subscribe to.

What it does: checks the topic of every ``ctx.peek``, ``ctx.getByIds`` and
reservation (``{ topic, ids }`` returned from ``prepare``) against the
consumer's ``subscribe`` list.

Why is this bad? The host only lets a consumer see and reserve events of its
subscribed topics, and the scheduler only wakes it for those: the call fails
at run time, or the events are never consumed.
"""

from __future__ import annotations

from collections.abc import Iterator

from keep_sdk.model import HandlerKind
from keep_sdk.validator._diagnostics import Severity
from keep_sdk.validator.facts import Analysis
from keep_sdk.validator.rule import Finding, Rule, RuleMeta
from keep_sdk.validator.rules._support import why

__all__ = ["rule"]

_WHAT = {"peek": "`ctx.peek`", "getByIds": "`ctx.getByIds`", "reservation": "a reservation"}

META = RuleMeta(
    id="unsubscribed-topic",
    severity=Severity.ERROR,
    description="A consumer peeks at or reserves events of a topic it does not subscribe to.",
    rationale=why(__doc__),
    messages={
        "unsubscribed": (
            "{what} names topic `{topic}`, but consumer `{consumer}` subscribes only to "
            "{subscribed}"
        ),
    },
    hint=(
        'Add "{topic}" to the `subscribe` list of consumer `{consumer}`, or use one of its '
        "subscribed topics: {subscribed}."
    ),
)


def check(analysis: Analysis) -> Iterator[Finding]:
    """Peeks, getByIds and reservations on declared topics outside `subscribe`."""
    declared = analysis.declared_topics
    for use in analysis.topics:
        handler = use.handler
        if use.topic is None or use.via not in _WHAT or handler is None:
            continue
        if handler.kind is not HandlerKind.CONSUMER or handler.consumer is None:
            continue
        if declared is not None and use.topic not in declared:
            continue
        subscribe = handler.consumer.subscribe
        if use.topic in subscribe:
            continue
        yield Finding(
            "unsubscribed",
            use.node,
            {
                "what": _WHAT[use.via],
                "topic": use.topic,
                "consumer": handler.name,
                "subscribed": ", ".join(f"`{t}`" for t in subscribe),
            },
            handler,
        )


rule = Rule(META, check)
