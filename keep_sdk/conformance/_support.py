"""Test tools that need no pytest: a manual clock and a fault injector for stores."""

from __future__ import annotations

from keep_sdk.cases import ManualClock

__all__ = ["FaultInjector", "InjectedFault", "ManualClock"]


class InjectedFault(Exception):
    """Raised by `FaultInjector` inside a commit point; the store must change nothing."""


class FaultInjector:
    """A store fault hook that raises `InjectedFault` at the n-th fault point it reaches."""

    def __init__(self) -> None:
        self.fail_at: int | None = None
        self.calls: list[str] = []

    def arm(self, n: int) -> None:
        """Raise at the `n`-th call from now (1-based)."""
        self.fail_at = n
        self.calls = []

    def disarm(self) -> None:
        """Stop raising; calls are still recorded."""
        self.fail_at = None

    def __call__(self, point: str) -> None:
        self.calls.append(point)
        if self.fail_at is not None and len(self.calls) == self.fail_at:
            raise InjectedFault(f"fault injected at {point} (fault point #{self.fail_at})")
