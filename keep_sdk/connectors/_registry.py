"""A set of connectors the runtime calls by name: instances, and ones built on first use."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from typing import TYPE_CHECKING, Any

from keep_sdk.connectors._lazy import Builder, LazyConnector
from keep_sdk.connectors.base import Connector
from keep_sdk.contract.manifest import Manifest
from keep_sdk.errors import ConfigurationError, InternalError, TransientError, UnknownConnector

if TYPE_CHECKING:
    from pydantic import JsonValue

    from keep_sdk.connectors.operation import Operation
    from keep_sdk.model import ReconcileOutcome

__all__ = ["ConnectorSet"]


class ConnectorSet(Mapping[str, Connector]):
    """Connectors keyed by script name, with the manifest they make up.

    `connectors` are instances; `deferred` maps more names to builders that the
    set calls the first time a connector is needed (`keep_sdk.connectors._lazy`).
    Names are known without building: ``in``, iteration and ``len`` build nothing.
    Getting one by name (``set[name]``, `operation`, `invoke`, `reconcile`) builds
    it, once; a build that fails there is a `TransientError` with the build's
    message, so the run that needed it waits and a later one tries again.
    `manifest` needs every connector and lets a build's `ConfigurationError` through.
    `close` closes only the deferred connectors it built; instances passed in
    belong to the caller.
    """

    def __init__(
        self,
        connectors: Mapping[str, Connector] | list[Connector],
        *,
        deferred: Mapping[str, Builder] | None = None,
    ) -> None:
        items = connectors.values() if isinstance(connectors, Mapping) else connectors
        self._eager = {c.name: c for c in items}
        self._lazy = {name: LazyConnector(name, build) for name, build in (deferred or {}).items()}
        clashes = sorted(set(self._eager) & set(self._lazy))
        if clashes:
            raise InternalError(
                f"connector {clashes[0]!r} is given both as an instance and as a builder"
            )
        self._names = sorted([*self._eager, *self._lazy])

    @classmethod
    def from_classes(
        cls, classes: Iterable[type[Connector]], **options: Mapping[str, Any]
    ) -> ConnectorSet:
        """Instantiate each class; `options[name]` are the constructor kwargs of `name`."""
        return cls([klass(**dict(options.get(klass.name, {}))) for klass in classes])

    def __getitem__(self, name: str) -> Connector:
        eager = self._eager.get(name)
        if eager is not None:
            return eager
        lazy = self._lazy.get(name)
        if lazy is None:
            known = ", ".join(self._names) or "none"
            raise UnknownConnector(
                f"there is no connector {name!r}; registered connectors: {known}",
                connector=name,
            )
        try:
            return lazy.get()
        except ConfigurationError as exc:
            raise TransientError(str(exc)) from exc

    def __contains__(self, name: object) -> bool:
        return name in self._eager or name in self._lazy

    def __iter__(self) -> Iterator[str]:
        return iter(self._names)

    def __len__(self) -> int:
        return len(self._names)

    def built(self) -> dict[str, Connector]:
        """The instances at hand, by name: every one passed in and each deferred one built so
        far. Builds nothing."""
        found = dict(self._eager)
        for name, lazy in self._lazy.items():
            if (instance := lazy.built) is not None:
                found[name] = instance
        return {name: found[name] for name in self._names if name in found}

    def manifest(self) -> Manifest:
        """The manifest of these connectors; builds every deferred one not built yet and
        raises the `ConfigurationError` of the first (by name) that cannot be built."""
        return Manifest(
            connectors=[
                (self._eager[name] if name in self._eager else self._lazy[name].get()).manifest()
                for name in self._names
            ]
        )

    def close(self) -> None:
        """Close the deferred connectors built so far (a later call builds them again)."""
        for lazy in self._lazy.values():
            lazy.close()

    def operation(self, connector: str, js_name: str) -> Operation[Any]:
        """The declaration of ``ctx.<connector>.<js_name>``."""
        return self[connector].operation(js_name)

    def invoke(
        self,
        connector: str,
        js_name: str,
        arguments: Any,
        *,
        idempotency_key: str | None = None,
    ) -> JsonValue:
        """Call ``ctx.<connector>.<js_name>(arguments)``; see `Connector.invoke`."""
        return self[connector].invoke(js_name, arguments, idempotency_key=idempotency_key)

    def reconcile(
        self, connector: str, js_name: str, arguments: Any, idempotency_key: str
    ) -> ReconcileOutcome:
        """Reconcile an uncertain mutation; see `Connector.reconcile`."""
        return self[connector].reconcile(js_name, arguments, idempotency_key)
