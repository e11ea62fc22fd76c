"""Test tools that need no pytest: a manual clock and a fault injector for stores."""

from __future__ import annotations

import datetime as dt
import threading

__all__ = ["FaultInjector", "InjectedFault", "ManualClock"]


class ManualClock:
    """A clock that moves only when told: ``clock()`` is the time, ``advance()`` moves it.

    Starts at the real current time, truncated to the millisecond, so stores that
    mix it with their own clock (a child process) stay close.
    """

    def __init__(self, start: dt.datetime | None = None) -> None:
        now = start or dt.datetime.now(dt.UTC)
        self._now = now.replace(microsecond=now.microsecond // 1000 * 1000)
        self._lock = threading.Lock()

    def __call__(self) -> dt.datetime:
        with self._lock:
            return self._now

    def advance(self, seconds: float) -> dt.datetime:
        """Move the time forward and return the new time."""
        with self._lock:
            self._now += dt.timedelta(seconds=seconds)
            return self._now

    def set(self, when: dt.datetime) -> dt.datetime:
        """Jump to `when` (an aware datetime) and return it."""
        with self._lock:
            self._now = when
            return self._now


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
