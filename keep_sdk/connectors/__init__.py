"""Connector SDK: declare operations, validate arguments, derive idempotency keys."""

from keep_sdk.connectors._idempotency import idempotency_key
from keep_sdk.connectors._registry import ConnectorSet
from keep_sdk.connectors.base import Connector
from keep_sdk.connectors.exec_adapter import ExecAdapter, parse_exec_url
from keep_sdk.connectors.operation import Operation, operation
from keep_sdk.contract.manifest import ConnectorManifest, Manifest, OperationManifest

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


def builtin_manifest() -> Manifest:
    """The manifest of the built-in connectors (gmail, sheets, slack)."""
    from keep_sdk.connectors.builtin import BUILTIN_CONNECTORS

    return Manifest(connectors=[c.manifest() for c in sorted(BUILTIN_CONNECTORS, key=_name)])


def _name(cls: type[Connector]) -> str:
    return cls.name
