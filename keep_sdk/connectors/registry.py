"""A set of live connector instances the runtime calls by name."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from typing import TYPE_CHECKING, Any

from keep_sdk.connectors.base import Connector
from keep_sdk.contract.manifest import Manifest
from keep_sdk.errors import UnknownConnector

if TYPE_CHECKING:
    from pydantic import JsonValue

    from keep_sdk.connectors.operation import Operation
    from keep_sdk.model import ReconcileOutcome

__all__ = ["ConnectorSet"]


class ConnectorSet(Mapping[str, Connector]):
    """Connector instances keyed by script name, with the manifest they make up."""

    def __init__(self, connectors: Mapping[str, Connector] | list[Connector]) -> None:
        items = connectors.values() if isinstance(connectors, Mapping) else connectors
        self._by_name = {c.name: c for c in sorted(items, key=lambda c: c.name)}

    @classmethod
    def from_classes(
        cls, classes: Iterable[type[Connector]], **options: Mapping[str, Any]
    ) -> ConnectorSet:
        """Instantiate each class; `options[name]` are the constructor kwargs of `name`."""
        return cls([klass(**dict(options.get(klass.name, {}))) for klass in classes])

    def __getitem__(self, name: str) -> Connector:
        try:
            return self._by_name[name]
        except KeyError:
            known = ", ".join(self._by_name) or "none"
            raise UnknownConnector(
                f"there is no connector {name!r}; registered connectors: {known}",
                connector=name,
            ) from None

    def __iter__(self) -> Iterator[str]:
        return iter(self._by_name)

    def __len__(self) -> int:
        return len(self._by_name)

    def manifest(self) -> Manifest:
        """The manifest of these connectors."""
        return Manifest(connectors=[c.manifest() for c in self._by_name.values()])

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
