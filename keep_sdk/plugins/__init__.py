"""Plugin system: hook specifications, observations and the plugin manager."""

from keep_sdk.contract.observations import Escalated, LedgerChanged, Observation, RunChanged
from keep_sdk.plugins._manager import (
    BUILTIN_PLUGINS,
    DISABLE_ENV,
    ENTRY_POINT_GROUP,
    KeepPlugins,
    default_plugins,
)
from keep_sdk.plugins.hookspecs import hookimpl, hookspec

__all__ = [
    "BUILTIN_PLUGINS",
    "DISABLE_ENV",
    "ENTRY_POINT_GROUP",
    "Escalated",
    "KeepPlugins",
    "LedgerChanged",
    "Observation",
    "RunChanged",
    "default_plugins",
    "hookimpl",
    "hookspec",
]
