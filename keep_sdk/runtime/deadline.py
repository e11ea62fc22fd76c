"""Call a connector with a wall-clock deadline: no answer in time is an uncertain outcome."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import TypeVar

from keep_sdk.errors import UncertainOutcome

__all__ = ["call_with_deadline"]

T = TypeVar("T")


def call_with_deadline(func: Callable[[], T], *, timeout_s: float, what: str) -> T:
    """Run `func` in a daemon thread and return its result, or re-raise what it raised.

    When `func` has not returned after `timeout_s`, raise `UncertainOutcome`:
    the call may still take effect later, so the caller must reconcile, never
    retry blindly. The thread is abandoned, not killed.
    """
    outcome: dict[str, object] = {}

    def target() -> None:
        try:
            outcome["value"] = func()
        except BaseException as exc:
            outcome["error"] = exc

    worker = threading.Thread(target=target, name=f"keep-call {what}", daemon=True)
    worker.start()
    worker.join(timeout_s)
    if worker.is_alive():
        raise UncertainOutcome(
            f"{what} gave no answer within {timeout_s:g}s; it may still take effect"
        )
    if "error" in outcome:
        raise outcome["error"]  # type: ignore[misc]
    return outcome["value"]  # type: ignore[return-value]
