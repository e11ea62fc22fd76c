"""Test tools that need no pytest: a manual clock, a fault injector, opening a store URL."""

from __future__ import annotations

from typing import Any

from keep_sdk.cases import ManualClock
from keep_sdk.plugins import default_plugins
from keep_sdk.stores import Store

__all__ = ["FaultInjector", "InjectedFault", "ManualClock", "open_url"]


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


def open_url(url: str, **options: Any) -> Store:
    """The store at `url`, opened as every ``keep`` command opens it: by the opener the
    installed plugins register for its scheme (``register_stores``). `options` (``clock``…)
    go to the opener."""
    return default_plugins().open_store(url, **options)
