"""What the host checks in what a script returns: PrepareResult, state and data sizes."""

from __future__ import annotations

import datetime as dt

from pydantic import JsonValue, ValidationError

from keep_sdk.contract.codec import measure
from keep_sdk.contract.workflow import ConsumerManifest
from keep_sdk.errors import LimitExceeded, LogicError
from keep_sdk.model import HostPolicy, PrepareResult, explain_validation_error

__all__ = ["check_prepare_result", "check_size"]

_SHOWN_PROBLEMS = 20


def check_size(value: JsonValue, what: str, policy: HostPolicy) -> None:
    """Refuse `value` when its JSON is over the policy's state size limit.

    Measured as the sandbox boundary measures it: UTF-8 bytes of canonical JSON.
    """
    size = measure(value)
    if size > policy.sandbox.max_state_bytes:
        raise LimitExceeded(
            f"{what} is {size} bytes of JSON, over the limit of "
            f"{policy.sandbox.max_state_bytes}; keep state small (cursors, counters)",
            limit="state_bytes",
        )


def check_prepare_result(
    raw: JsonValue,
    *,
    returned: bool,
    consumer: ConsumerManifest,
    policy: HostPolicy,
    now: dt.datetime,
) -> PrepareResult:
    """The PrepareResult `prepare` returned, checked, with its wakeAt clamped to policy.

    Raises `LogicError` with one readable line per problem: nothing returned,
    fields of the wrong type or unknown, topics the consumer does not
    subscribe to, data over the size limit.
    """
    if raw is None or not returned:
        raise LogicError(
            f"prepare() of {consumer.name} returned nothing; return "
            "{ reservations: [...], data: {...} } (empty reservations to do nothing)"
        )
    try:
        result = PrepareResult.model_validate(raw)
    except ValidationError as exc:
        problems = explain_validation_error(exc)
        shown = problems[:_SHOWN_PROBLEMS]
        if len(problems) > _SHOWN_PROBLEMS:
            shown.append(f"… and {len(problems) - _SHOWN_PROBLEMS} more problems of the same kind")
        raise LogicError(
            f"prepare() of {consumer.name} returned an invalid result:\n  " + "\n  ".join(shown)
        ) from None
    for topic in result.reserved_ids:
        if topic not in consumer.subscribe:
            raise LogicError(
                f"prepare() of {consumer.name} reserved events of topic {topic!r}, which "
                f"it does not subscribe to; it subscribes to: {', '.join(consumer.subscribe)}"
            )
    check_size(result.data, "prepare() data", policy)
    if result.wake_at is None:
        return result
    earliest = now + dt.timedelta(seconds=policy.wake_at_min_s)
    latest = now + dt.timedelta(seconds=policy.wake_at_max_s)
    return result.model_copy(update={"wake_at": min(max(result.wake_at, earliest), latest)})
