"""What the tools work on: the store, keep.toml and plugins of one ``keep mcp``."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from keep_sdk.app import DEFAULT_ISOLATION, Installation, read_config, script_manifest
from keep_sdk.config import KeepConfig
from keep_sdk.contract.manifest import Manifest
from keep_sdk.plugins import KeepPlugins

__all__ = ["Workspace"]


@dataclass(frozen=True)
class Workspace:
    """The store and configuration every tool call opens, as every ``keep`` command does.

    `store_url` (None: the default store) and `config_path` (``keep --config``; None:
    found as `read_config` finds it) are read again at each call, so an edited keep.toml
    counts from the next call. `allow_deploy` turns the deploy tool on; nothing here
    ever grants a permission."""

    plugins: KeepPlugins
    store_url: str | None = None
    config_path: Path | None = None
    allow_deploy: bool = False

    def config(self) -> KeepConfig:
        """The checked keep.toml; a bad one raises its `ConfigurationError`."""
        return read_config(self.store_url, explicit=self.config_path, plugins=self.plugins)

    def manifest(self) -> Manifest:
        """What scripts may call here (`keep_sdk.app.script_manifest`), as ``keep connectors``
        lists them."""
        return script_manifest(self.config(), plugins=self.plugins)

    @contextmanager
    def opened(
        self, *, read_only: bool, isolation: str = DEFAULT_ISOLATION
    ) -> Iterator[Installation]:
        """The installation at the store, closed when the block ends; `read_only` opens
        nothing new and needs the store to exist (`Installation.open`)."""
        installation = Installation.open(
            self.store_url,
            plugins=self.plugins,
            config=self.config(),
            read_only=read_only,
            must_exist=read_only,
            isolation=isolation,
        )
        try:
            yield installation
        finally:
            installation.close()
