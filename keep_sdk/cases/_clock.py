"""A clock that moves only when told: the time of every case and scenario."""

from __future__ import annotations

import datetime as dt
import threading

__all__ = ["ManualClock"]


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
