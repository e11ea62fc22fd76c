"""The hooks a keep_sdk plugin may implement.

Each hook is an empty function whose docstring is its contract. A plugin is any
module or object with functions marked ``@keep_sdk.hookimpl`` and named like
the hooks below; a distribution exposes it through the entry-point group
``keep_sdk``. Every hook is documented in ``docs/plugins.md``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import pluggy

if TYPE_CHECKING:
    from keep_sdk.connectors import Connector
    from keep_sdk.contract.observations import Observation

__all__ = ["hookimpl", "hookspec"]

hookspec = pluggy.HookspecMarker("keep_sdk")
hookimpl = pluggy.HookimplMarker("keep_sdk")
"""Marker to be imported and used in plugins: ``@keep_sdk.hookimpl``."""


# Contributions: each plugin adds to a registry.


@hookspec
def register_connectors() -> Sequence[type[Connector]]:
    """Return connector classes whose operations scripts may call as ``ctx.<name>.<op>``.

    Each class must subclass `keep_sdk.connectors.Connector` and declare a
    unique ``name``; two plugins registering the same name is a `PluginError`.
    Return an empty list to contribute nothing.
    """
    return ()


@hookspec
def register_connector_types() -> Sequence[Any]:
    """Return connector types (`keep_sdk.connectors.configured.ConnectorType`) for keep.toml.

    A type is what ``[connectors.<name>] type = "..."`` names: a pydantic settings
    model for the rest of the table and a ``build(name, settings) -> Connector``
    factory. The built-in plugin contributes ``http`` and ``sql``; a type name
    registered twice is a `PluginError`.
    """
    return ()


@hookspec
def register_stores() -> Mapping[str, Callable[[str], Any]]:
    """Return store openers keyed by URL scheme (``"redis"``, ``"dynamodb"``...).

    An opener takes the full URL and returns an object satisfying
    `keep_sdk.stores.Store`; `keep_sdk.stores.open_store` calls it for URLs with
    that scheme. A scheme registered twice is a `PluginError`.
    """
    return {}


@hookspec
def register_rules() -> Sequence[Any]:
    """Return validator rules (`keep_sdk.validator.Rule` instances) to run on every script.

    A rule id must be unique across all plugins and the built-in catalog.
    """
    return ()


# Observers: each plugin is told, none can change the outcome.


@hookspec
def observe(observation: Observation) -> None:
    """Be told of every run status change, ledger change and escalation, in order.

    Called after the change is durable. ``observation`` is one of
    `RunChanged`, `LedgerChanged` or `Escalated` (see
    ``keep_sdk.contract.observations``). An exception raised here is logged and
    ignored: an observer can never fail or block a run.
    """
