"""How failures inside and around the engine become outcomes."""

from __future__ import annotations

import re
from typing import Final

from pydantic import JsonValue

from keep_sdk.contract.codec import cut
from keep_sdk.errors import (
    ConnectorError,
    LimitExceeded,
    LogicError,
    PermissionDenied,
    PreconditionFailed,
    StoreUnavailable,
    TransientError,
    UncertainOutcome,
)
from keep_sdk.model import FailureKind
from keep_sdk.sandbox.outcome import (
    CallFailed,
    InternalFailure,
    Limit,
    LimitFailure,
    LogicFailure,
    Outcome,
)

__all__ = [
    "PRELUDE_PAD",
    "RelayedOutcome",
    "outcome_for_engine_exception",
    "outcome_for_host_error",
    "outcome_for_thrown",
    "script_location",
]

PRELUDE_PAD: Final = 20_000
"""Columns of padding before the one-line prelude: its frames are ``<input>:1:<col > PAD>``."""

_FRAME = re.compile(r"^\s*at (?:.* \()?<input>:(\d+):(\d+)\)?$", re.MULTILINE)
_STACK_OVERFLOW = "Maximum call stack size exceeded"


class RelayedOutcome(Exception):
    """Raised by a host interface that already knows how the phase must end.

    The worker process raises it for a host call that failed in the parent, where
    the real exception was classified.
    """

    def __init__(self, outcome: Outcome) -> None:
        super().__init__(getattr(outcome, "message", outcome.kind))
        self.outcome = outcome


def script_location(stack: str) -> tuple[int | None, int | None]:
    """The first frame of `stack` that lies in the workflow script (not in the prelude).

    A frame's location is read only at the end of its line, so a function named like a
    frame (``"f (<input>:99:1)"``) cannot move it.
    """
    for match in _FRAME.finditer(stack):
        line, column = int(match[1]), int(match[2])
        if line == 1 and column > PRELUDE_PAD:
            continue
        return line, column
    return None, None


def outcome_for_host_error(
    exc: BaseException, name: str, *, line: int | None = None, column: int | None = None
) -> Outcome:
    """The outcome of a ctx call whose host interface raised `exc`."""
    if isinstance(exc, RelayedOutcome):
        outcome = exc.outcome
        if getattr(outcome, "line", 0) is None and line is not None:
            return outcome.model_copy(update={"line": line, "column": column})
        return outcome
    where = {"line": line, "column": column}
    if isinstance(exc, LimitExceeded):
        limit = exc.limit if exc.limit in Limit.__members__.values() else Limit.HOST_CALLS
        return LimitFailure(limit=Limit(limit), message=exc.message, **where)
    if isinstance(exc, LogicError):
        return LogicFailure(message=exc.message, error_name=type(exc).__name__, **where)
    if isinstance(exc, StoreUnavailable):
        return CallFailed(
            operation=name,
            failure=FailureKind.TRANSIENT,
            message=f"ctx.{name} could not read the store: {exc}",
            **where,
        )
    if isinstance(exc, ConnectorError):
        failure = FailureKind.INTERNAL
        retry_after = None
        if isinstance(exc, TransientError):
            failure, retry_after = FailureKind.TRANSIENT, exc.retry_after
        elif isinstance(exc, PermissionDenied):
            failure = FailureKind.PERMISSION
        elif isinstance(exc, PreconditionFailed):
            failure = FailureKind.PRECONDITION
        elif isinstance(exc, UncertainOutcome):
            failure = FailureKind.INDETERMINATE
        text = str(exc)
        return CallFailed(
            operation=name,
            failure=failure,
            message=text if name in text else f"ctx.{name} failed: {text}",
            retry_after=retry_after,
            permission=exc.permission if isinstance(exc, PermissionDenied) else None,
            **where,
        )
    return InternalFailure(message=f"ctx.{name} failed in the host: {type(exc).__name__}: {exc}")


_ALLOCATION_REFUSED: Final = frozenset(
    {
        "out of memory",
        "string too long",
        "invalid string length",
        "invalid array buffer length",
    }
)


def _limit_for(name: str, message: str, value: str) -> Limit | None:
    if value == "null" or (
        name in ("InternalError", "RangeError")
        and (message in _ALLOCATION_REFUSED or message.startswith("out of memory"))
    ):
        return Limit.MEMORY
    if name == "RangeError" and message.startswith(_STACK_OVERFLOW):
        return Limit.STACK
    return None


def outcome_for_thrown(description: dict[str, JsonValue], *, memory_bytes: int) -> Outcome:
    """The outcome of a value the handler threw, as the prelude's ``describe`` reported it."""
    name = str(description.get("name") or "Error")
    message = str(description.get("message") or "")
    value = str(description.get("value") or "error")
    line, column = script_location(str(description.get("stack") or ""))
    limit = _limit_for(name, message, value)
    if limit is Limit.MEMORY:
        return LimitFailure(
            limit=limit,
            message=f"the script ran out of memory (limit {memory_bytes} bytes) or asked for a "
            "string or buffer larger than the engine allows; the engine reports exhaustion as "
            "`throw null`, so a literal `throw null` reads the same",
            line=line,
            column=column,
        )
    if limit is Limit.STACK:
        return LimitFailure(
            limit=limit,
            message="the script recursed too deeply (Maximum call stack size exceeded)",
            line=line,
            column=column,
        )
    if value == "error":
        text = f"{name}: {message}" if message else name
    elif value == "object":
        text = "the script threw an object that is not an Error"
    elif value == "string":
        text = f"the script threw a string instead of an Error: {message!r}"
    else:
        text = f"the script threw a {value} instead of an Error: {message}".rstrip(": ")
    return LogicFailure(
        message=text, error_name=name if value == "error" else None, line=line, column=column
    )


def outcome_for_engine_exception(exc: BaseException, *, memory_bytes: int) -> Outcome:
    """The outcome of an exception that escaped an entry into the engine (no deadline fired)."""
    text = str(exc)
    first = text.split("\n", 1)[0]
    line, column = script_location(text)
    if first == "null" or first.startswith("InternalError: out of memory"):
        return LimitFailure(
            limit=Limit.MEMORY,
            message=f"the script ran out of memory (limit {memory_bytes} bytes)",
            line=line,
            column=column,
        )
    if type(exc).__name__ == "StackOverflow" or _STACK_OVERFLOW in first:
        return LimitFailure(
            limit=Limit.STACK,
            message="the script recursed too deeply (Maximum call stack size exceeded)",
            line=line,
            column=column,
        )
    if type(exc).__name__ in ("JSException",):
        name = first.split(":", 1)[0] if ":" in first else None
        if name == "SyntaxError":
            return LogicFailure(message=first, error_name=name, line=line, column=column)
        if "could not load module" in first:
            return LogicFailure(
                message=f"{first}: workflow scripts cannot import modules",
                error_name=name,
                line=line,
                column=column,
            )
        return LogicFailure(
            message=f"an exception escaped the promise machinery: {cut(first, 500)}",
            error_name=name,
            line=line,
            column=column,
        )
    return InternalFailure(message=f"the engine failed: {type(exc).__name__}: {cut(first, 500)}")
