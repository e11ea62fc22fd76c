"""The built-in plugin: the in-memory connector doubles, the built-in stores, the rule catalog.

Registered before any third-party plugin, like any other plugin: the packages
it draws from (connectors, stores, validator) know nothing of plugins.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from keep_sdk.plugins.hookspecs import hookimpl

if TYPE_CHECKING:
    from keep_sdk.connectors import Connector
    from keep_sdk.connectors.configured import ConnectorType
    from keep_sdk.validator import Rule

__all__ = [
    "register_connector_types",
    "register_connectors",
    "register_rules",
    "register_stores",
]


@hookimpl
def register_connectors() -> Sequence[type[Connector]]:
    """The built-in doubles: gmail, sheets and slack."""
    from keep_sdk.connectors.builtin import BUILTIN_CONNECTORS

    return BUILTIN_CONNECTORS


@hookimpl
def register_connector_types() -> Sequence[ConnectorType]:
    """The keep.toml connector types: http and sql (mcp and mail: see connectors/types.py)."""
    from keep_sdk.connectors.types import BUILTIN_CONNECTOR_TYPES

    return BUILTIN_CONNECTOR_TYPES


@hookimpl
def register_stores() -> Mapping[str, Callable[..., Any]]:
    """``memory://``, ``sqlite:///…`` and ``postgresql://…``."""
    from keep_sdk.stores import BUILTIN_OPENERS

    return BUILTIN_OPENERS


@hookimpl
def register_rules() -> Sequence[Rule]:
    """The rule catalog (docs/rules/)."""
    from keep_sdk.validator.rules import BUILTIN_RULES

    return BUILTIN_RULES
