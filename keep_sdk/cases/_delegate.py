"""`DelegatingConnectors`: a connector set that answers through another one, lazily."""

from __future__ import annotations

from collections.abc import Iterator

from keep_sdk.connectors import Connector, ConnectorSet, Manifest

__all__ = ["DelegatingConnectors"]


class DelegatingConnectors(ConnectorSet):
    """The connectors of `inner`, unchanged: a base for a set that changes some of them.

    Nothing is built here: names, ``in`` and `built` come from `inner` without
    building, and a connector is built (by `inner`) only when it is asked for by name.
    A subclass overrides `__getitem__` (and what else it changes); `operation`,
    `invoke` and `reconcile` go through `__getitem__`.
    """

    def __init__(self, inner: ConnectorSet) -> None:
        super().__init__([])
        self.inner = inner

    def __getitem__(self, name: str) -> Connector:
        return self.inner[name]

    def __contains__(self, name: object) -> bool:
        return name in self.inner

    def __iter__(self) -> Iterator[str]:
        return iter(self.inner)

    def __len__(self) -> int:
        return len(self.inner)

    def built(self) -> dict[str, Connector]:
        """The connectors `inner` has at hand (see `ConnectorSet.built`); builds nothing."""
        return self.inner.built()

    def manifest(self) -> Manifest:
        """`inner`'s manifest (see `ConnectorSet.manifest`)."""
        return self.inner.manifest()

    def close(self) -> None:
        """Close what `inner` built."""
        self.inner.close()
