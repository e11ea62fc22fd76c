"""`LazyConnector`: a connector built the first time it is needed, at most once."""

from __future__ import annotations

import threading
from collections.abc import Callable

from keep_sdk.connectors.base import Connector

__all__ = ["Builder", "LazyConnector"]

Builder = Callable[[], Connector]
"""Builds one connector instance: may start a process or open a connection, and raises
(`ConfigurationError` for a server that cannot be started or reached) when it cannot."""


class LazyConnector:
    """The connector `name`, built by `build` on the first `get`.

    Concurrent first calls build it once: the others wait for that build. A
    build that raises is not remembered: the next `get` tries again, so a
    server that comes back is used without restarting anything. `close` closes
    the instance if one was built, and later `get`s build a new one.
    """

    def __init__(self, name: str, build: Builder) -> None:
        self.name = name
        self._build = build
        self._built: Connector | None = None
        self._lock = threading.Lock()

    @property
    def built(self) -> Connector | None:
        """The instance built so far, or None; never builds."""
        return self._built

    def get(self) -> Connector:
        """The instance, built now if it was not yet; raises whatever the build raises."""
        built = self._built
        if built is not None:
            return built
        with self._lock:
            if self._built is None:
                self._built = self._build()
            return self._built

    def close(self) -> None:
        """Close the built instance (if it has a ``close``); a no-op when nothing was built."""
        with self._lock:
            built, self._built = self._built, None
        close = getattr(built, "close", None)
        if callable(close):
            close()
