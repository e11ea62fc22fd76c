"""What a value from outside must satisfy to enter a workflow without a script sending it.

A person's ``keep publish`` and a durable operation's result (``keep notify``, the
console, a worker's poll) cross into runs as if a script had sent them, so they pass the
boundary codec (`keep_sdk.contract.codec`) with the policy's limits, in its unit (UTF-8
bytes of canonical JSON). The runtime and the store-only command paths call these
same functions.
"""

from __future__ import annotations

from typing import Final

from pydantic import JsonValue

from keep_sdk.contract.codec import BoundaryError, check, loads, scan
from keep_sdk.errors import InvalidArguments
from keep_sdk.model import HostPolicy

__all__ = [
    "PUBLISH_RESERVE",
    "check_notification_result",
    "check_publication",
    "notification_result",
]

PUBLISH_RESERVE: Final = 512
"""Bytes of `max_value_bytes` a publish may not use: the host adds at most this much
(``topic``, ``createdAt``, a host ``messageId``) when `peek` returns the event."""


def check_publication(
    topic: str, message_id: str, title: str, payload: JsonValue, policy: HostPolicy
) -> None:
    """Refuse an event a script could not have published: the same boundary rules and the
    same unit as ``ctx.publish``, so a consumer can peek it. Raises `InvalidArguments`."""
    limits = policy.sandbox
    cap = limits.max_value_bytes - PUBLISH_RESERVE
    event = {"messageId": message_id, "title": title, "payload": payload}
    try:
        check(
            [topic, event],
            root="arguments",
            roots=("topic", "event"),
            max_bytes=cap,
            max_depth=limits.max_value_depth,
        )
    except BoundaryError as exc:
        extra = f" (an event may use {cap} bytes of UTF-8 JSON)" if exc.rule == "size" else ""
        message = f"the event cannot be published{extra}: {exc.message}"
        raise InvalidArguments(message, problems=[exc.message]) from None


def _refused(exc: BoundaryError) -> InvalidArguments:
    return InvalidArguments(
        f"the result cannot enter the run, so nothing was recorded and the run keeps "
        f"waiting: {exc.message}",
        problems=[exc.message],
    )


def check_notification_result(result: JsonValue, policy: HostPolicy) -> None:
    """Refuse a durable result that could not cross into the run: the boundary codec's
    rules (finite numbers, safe integers, no lone surrogate) with the policy's value
    size and depth. Raises `InvalidArguments` with the reason; stores nothing."""
    limits = policy.sandbox
    try:
        check(
            result,
            root="result",
            max_bytes=limits.max_value_bytes,
            max_depth=limits.max_value_depth,
        )
    except BoundaryError as exc:
        raise _refused(exc) from None


def notification_result(text: str, policy: HostPolicy) -> JsonValue:
    """`text` (a durable operation's result as JSON) parsed and checked by the boundary codec,
    exactly as a value entering a run is: its size and depth before parsing, then every
    rule of `check_notification_result`. Raises `InvalidArguments` with the reason."""
    limits = policy.sandbox
    try:
        scan(
            text,
            what="the result",
            max_bytes=limits.max_value_bytes,
            max_depth=limits.max_value_depth,
        )
        value: JsonValue = loads(text, what="the result")
    except BoundaryError as exc:
        raise _refused(exc) from None
    check_notification_result(value, policy)
    return value
