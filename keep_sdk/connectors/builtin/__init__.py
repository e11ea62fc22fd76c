"""Built-in connectors: in-memory doubles of gmail, sheets and slack, registered as a plugin."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from keep_sdk.connectors.builtin.double import ServiceDouble
from keep_sdk.connectors.builtin.faults import Fault, FaultKind, FaultPlan
from keep_sdk.connectors.builtin.gmail import Gmail
from keep_sdk.connectors.builtin.sheets import Sheets
from keep_sdk.connectors.builtin.slack import Slack
from keep_sdk.plugins.hookspecs import hookimpl

if TYPE_CHECKING:
    from keep_sdk.connectors.base import Connector

__all__ = [
    "BUILTIN_CONNECTORS",
    "Fault",
    "FaultKind",
    "FaultPlan",
    "Gmail",
    "ServiceDouble",
    "Sheets",
    "Slack",
    "register_connectors",
]

BUILTIN_CONNECTORS: tuple[type[ServiceDouble], ...] = (Gmail, Sheets, Slack)


@hookimpl
def register_connectors() -> Sequence[type[Connector]]:
    """The built-in doubles."""
    return BUILTIN_CONNECTORS
