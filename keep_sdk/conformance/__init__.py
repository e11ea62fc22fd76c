"""Conformance suites shipped in the wheel, and the pytest plugin that runs them.

Store authors: subclass `StoreConformance` (see ``docs/stores.md``) or run
``keep conformance --store URL``. `StoreConformance` is imported on first use,
since it needs pytest; the other names work without it.
"""

from typing import Any

from keep_sdk.conformance._support import FaultInjector, InjectedFault, ManualClock
from keep_sdk.conformance.postgres import PostgresServer, PostgresUnavailable

__all__ = [
    "FaultInjector",
    "InjectedFault",
    "ManualClock",
    "PostgresServer",
    "PostgresUnavailable",
    "StoreConformance",
]


def __getattr__(name: str) -> Any:
    if name == "StoreConformance":
        from keep_sdk.conformance.stores import StoreConformance

        return StoreConformance
    raise AttributeError(f"module 'keep_sdk.conformance' has no attribute {name!r}")
