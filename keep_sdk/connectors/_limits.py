"""Per-connector call limits: a rate limit and a concurrency limit, shared by all threads."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager

__all__ = ["CallLimits"]


class CallLimits:
    """At most `max_concurrency` calls at once, started at most `rate_per_s` per second.

    `rate_per_s` None means no rate limit. A call waits for its turn; the rate is
    enforced as evenly spaced start times (a token bucket of one token), so a
    burst never exceeds the configured rate.
    """

    def __init__(self, *, rate_per_s: float | None, max_concurrency: int) -> None:
        self.interval_s = 1.0 / rate_per_s if rate_per_s else 0.0
        self._slots = threading.BoundedSemaphore(max_concurrency)
        self._lock = threading.Lock()
        self._next_start = 0.0

    def _wait_for_turn(self) -> None:
        if not self.interval_s:
            return
        with self._lock:
            now = time.monotonic()
            start = max(now, self._next_start)
            self._next_start = start + self.interval_s
        if start > now:
            time.sleep(start - now)

    def slot(self) -> AbstractContextManager[object]:
        """Hold one call slot for the duration of a call, after waiting for the rate."""
        return self._paced() if self.interval_s else self._slots

    @contextmanager
    def _paced(self) -> Iterator[None]:
        with self._slots:
            self._wait_for_turn()
            yield
