"""Assemble the plugin manager: hook specs, built-in plugins, entry-point plugins."""

from __future__ import annotations

import importlib
import logging
import os
from collections.abc import Callable, Iterable, Mapping
from functools import cache
from importlib.metadata import EntryPoint, entry_points
from typing import TYPE_CHECKING, Any

import pluggy

from keep_sdk.errors import PluginError
from keep_sdk.plugins import hookspecs

if TYPE_CHECKING:
    from keep_sdk.connectors import Connector, ConnectorSet
    from keep_sdk.connectors.configured import ConnectorType
    from keep_sdk.contract.manifest import Manifest
    from keep_sdk.contract.observations import Observation
    from keep_sdk.model import HostPolicy
    from keep_sdk.stores import Store
    from keep_sdk.validator import Report, Rule
    from keep_sdk.workflow import Workflow

__all__ = [
    "BUILTIN_PLUGINS",
    "DISABLE_ENV",
    "ENTRY_POINT_GROUP",
    "KeepPlugins",
    "default_plugins",
]

logger = logging.getLogger("keep_sdk.plugins")

ENTRY_POINT_GROUP = "keep_sdk"
DISABLE_ENV = "KEEP_SDK_DISABLE_PLUGINS"
"""Set to ``1`` to load only the built-in plugins (third-party entry points are ignored)."""

BUILTIN_PLUGINS: tuple[str, ...] = ("keep_sdk.plugins.builtin",)
"""Modules registered as plugins before any third-party plugin."""


class KeepPlugins:
    """The registries plugins contribute to, built from one pluggy `PluginManager`.

    Plugins that fail to import are skipped and listed in `load_errors`;
    conflicting registrations raise `PluginError` when the registry is read.
    The registries are what lower layers are handed: `connector_set`, `manifest`,
    `rules`, `store_openers`; `validate`, `load_workflow` and `open_store` use
    them all, so a script is checked against this plugin set's connectors *and*
    rules. Registering a plugin invalidates what was read before.
    """

    def __init__(self, *, load_entry_points: bool = True) -> None:
        self.pm = pluggy.PluginManager("keep_sdk")
        self.pm.add_hookspecs(hookspecs)
        self.load_errors: list[PluginError] = []
        self._manifest: Manifest | None = None
        for module_name in BUILTIN_PLUGINS:
            self.pm.register(importlib.import_module(module_name), name=module_name)
        if load_entry_points:
            self._load_entry_points(entry_points(group=ENTRY_POINT_GROUP))

    def _load_entry_points(self, found: Iterable[EntryPoint]) -> None:
        for entry_point in found:
            if self.pm.has_plugin(entry_point.name) or self.pm.is_blocked(entry_point.name):
                continue
            dist = entry_point.dist.name if entry_point.dist else "?"
            try:
                plugin = entry_point.load()
                self.pm.register(plugin, name=entry_point.name)
            except Exception as exc:
                error = PluginError(
                    f"plugin {entry_point.name!r} (from distribution {dist!r}, "
                    f"{entry_point.value}) failed to load and was skipped: "
                    f"{type(exc).__name__}: {exc}. Check that it is compatible with this "
                    f"keep-sdk version, or uninstall it.",
                    plugin=entry_point.name,
                )
                self.load_errors.append(error)
                logger.warning("%s", error)

    def register(self, plugin: object, name: str | None = None) -> None:
        """Register `plugin` (an object or module with hookimpls), as tests and hosts do."""
        self.pm.register(plugin, name=name)
        self._manifest = None

    def connectors(self) -> dict[str, type[Connector]]:
        """Every registered connector class by its script name."""
        from keep_sdk.connectors import Connector

        found: dict[str, type[Connector]] = {}
        for contributed in self.pm.hook.register_connectors():
            for cls in contributed:
                if not (isinstance(cls, type) and issubclass(cls, Connector)):
                    raise PluginError(
                        f"register_connectors returned {cls!r}, which is not a "
                        "keep_sdk.connectors.Connector subclass"
                    )
                if cls.name in found and found[cls.name] is not cls:
                    raise PluginError(
                        f"two plugins register a connector named {cls.name!r}: "
                        f"{found[cls.name].__qualname__} and {cls.__qualname__}; "
                        "uninstall one of them"
                    )
                found[cls.name] = cls
        return dict(sorted(found.items()))

    def connector_types(self) -> dict[str, ConnectorType]:
        """Every keep.toml connector type (``type = "http"`` ...) by name."""
        from keep_sdk.connectors.configured import ConnectorType

        found: dict[str, ConnectorType] = {}
        for contributed in reversed(self.pm.hook.register_connector_types()):
            for kind in contributed:
                if not isinstance(kind, ConnectorType):
                    raise PluginError(
                        f"register_connector_types returned {kind!r}, which is not a "
                        "keep_sdk.connectors.configured.ConnectorType"
                    )
                if kind.name in found and found[kind.name] is not kind:
                    raise PluginError(
                        f"two plugins register the connector type {kind.name!r}; "
                        "uninstall one of them"
                    )
                found[kind.name] = kind
        return dict(sorted(found.items()))

    def manifest(self) -> Manifest:
        """What scripts may call: the manifest of every registered connector (built once)."""
        if self._manifest is None:
            from keep_sdk.contract.manifest import Manifest

            self._manifest = Manifest(connectors=[c.manifest() for c in self.connectors().values()])
        return self._manifest

    def connector_set(self, **options: Mapping[str, Any]) -> ConnectorSet:
        """An instance of every registered connector; `options[name]` are its constructor kwargs."""
        from keep_sdk.connectors import ConnectorSet

        return ConnectorSet.from_classes(self.connectors().values(), **options)

    def store_openers(self) -> dict[str, Callable[[str], Any]]:
        """Every store opener by URL scheme."""
        found: dict[str, Callable[[str], Any]] = {}
        for contributed in self.pm.hook.register_stores():
            for scheme, opener in contributed.items():
                if scheme in found and found[scheme] is not opener:
                    raise PluginError(f"two plugins register the store scheme {scheme!r}")
                found[scheme] = opener
        return found

    def rules(self) -> list[Rule]:
        """Every validator rule, built-in ones first."""
        found: dict[str, Any] = {}
        for contributed in reversed(self.pm.hook.register_rules()):
            for rule in contributed:
                rule_id = rule.meta.id
                if rule_id in found and found[rule_id] is not rule:
                    raise PluginError(f"two plugins register the validator rule {rule_id!r}")
                found[rule_id] = rule
        return list(found.values())

    def open_store(self, url: str | None = None, **options: Any) -> Store:
        """`keep_sdk.stores.open_store` with every scheme registered by these plugins."""
        from keep_sdk.stores import open_store

        return open_store(url, openers=self.store_openers(), **options)

    def validate(
        self,
        source: str,
        *,
        policy: HostPolicy | None = None,
        filename: str | None = None,
        connectors: Manifest | None = None,
    ) -> Report:
        """`keep_sdk.validator.validate` with these plugins' rules and (by default) connectors.

        `connectors` replaces the registered connectors' manifest, e.g. with keep.toml's
        instances added."""
        from keep_sdk.validator import validate

        return validate(
            source,
            connectors=connectors if connectors is not None else self.manifest(),
            rules=self.rules(),
            policy=policy,
            filename=filename,
        )

    def load_workflow(
        self,
        source: str,
        *,
        connectors: Manifest | None = None,
        policy: HostPolicy | None = None,
        filename: str | None = None,
    ) -> Workflow:
        """`keep_sdk.workflow.load_workflow` with these plugins' rules and (by default) connectors.

        `connectors` narrows what scripts may call to a runtime's own connector set.
        """
        from keep_sdk.workflow import load_workflow

        return load_workflow(
            source,
            connectors=connectors if connectors is not None else self.manifest(),
            rules=self.rules(),
            policy=policy,
            filename=filename,
        )

    def notify(self, observation: Observation) -> None:
        """Call every `observe` hook; an observer that raises is logged and ignored."""
        for impl in self.pm.hook.observe.get_hookimpls():
            try:
                impl.function(observation=observation)
            except Exception:
                logger.exception("observer plugin %r raised; ignored", impl.plugin_name)


@cache
def default_plugins() -> KeepPlugins:
    """The process-wide plugins: built-ins plus installed entry points.

    Entry points are skipped when the environment variable ``KEEP_SDK_DISABLE_PLUGINS``
    is ``1``.
    """
    return KeepPlugins(load_entry_points=os.environ.get(DISABLE_ENV) != "1")
