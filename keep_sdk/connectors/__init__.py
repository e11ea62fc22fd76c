"""Connector SDK: declare operations, validate arguments, derive idempotency keys.

`ExecAdapter` and `parse_exec_url` are imported on first use (PEP 562): reading
keep.toml imports this package, and most commands run no ``keep+exec://`` adapter.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from keep_sdk.connectors._idempotency import idempotency_key
from keep_sdk.connectors._registry import ConnectorSet
from keep_sdk.connectors.base import Connector
from keep_sdk.connectors.operation import Operation, operation
from keep_sdk.contract.manifest import ConnectorManifest, Manifest, OperationManifest

if TYPE_CHECKING:
    from keep_sdk.connectors.exec_adapter import ExecAdapter as ExecAdapter
    from keep_sdk.connectors.exec_adapter import parse_exec_url as parse_exec_url

__all__ = [
    "Connector",
    "ConnectorManifest",
    "ConnectorSet",
    "ExecAdapter",
    "Manifest",
    "Operation",
    "OperationManifest",
    "builtin_manifest",
    "idempotency_key",
    "operation",
    "parse_exec_url",
]


def __getattr__(name: str) -> Any:
    if name in ("ExecAdapter", "parse_exec_url"):
        from keep_sdk.connectors import exec_adapter

        value = getattr(exec_adapter, name)
        globals()[name] = value
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def builtin_manifest() -> Manifest:
    """The manifest of the built-in connectors (gmail, sheets, slack)."""
    from keep_sdk.connectors.builtin import BUILTIN_CONNECTORS

    return Manifest(connectors=[c.manifest() for c in sorted(BUILTIN_CONNECTORS, key=_name)])


def _name(cls: type[Connector]) -> str:
    return cls.name
