"""Loading ``keep.toml`` into a checked `KeepConfig` (`keep_sdk.config._find` finds it)."""

from __future__ import annotations

import tomllib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ValidationError

from keep_sdk.config._errors import config_error, explain
from keep_sdk.config._find import ConfigSource, absolute
from keep_sdk.config._model import KeepConfigFile
from keep_sdk.config._paths import resolve_paths
from keep_sdk.config._references import SecretSource, load_secrets_file, resolve_references
from keep_sdk.config.policy import PolicyValue, checked_policy, effective_policy, policy_values
from keep_sdk.connectors.base import Connector
from keep_sdk.connectors.configured import ConnectorType
from keep_sdk.connectors.secrets import Redactor, Secret
from keep_sdk.errors import ConfigurationError
from keep_sdk.model import HostPolicy

__all__ = ["ConfiguredInstance", "KeepConfig", "load_config"]


@dataclass(frozen=True)
class ConfiguredInstance:
    """One ``[connectors.<name>]`` after checking: its type and validated settings."""

    name: str
    type: ConnectorType
    settings: BaseModel

    def build(self) -> Connector:
        """The connector instance (opens no connection until called)."""
        return self.type.build(self.name, self.settings)


@dataclass(frozen=True)
class KeepConfig:
    """A checked ``keep.toml``: connector instances, the policy and per-workflow overrides.

    `secrets` are every resolved reference; `redact` masks them in any text.
    `source` says which file this is and why (None: built without a lookup).
    """

    path: Path | None = None
    connectors: dict[str, ConfiguredInstance] = field(default_factory=dict)
    file_policy: dict[str, Any] = field(default_factory=dict)
    workflow_policies: dict[str, dict[str, Any]] = field(default_factory=dict)
    secrets: tuple[Secret, ...] = ()
    source: ConfigSource | None = None

    @property
    def policy(self) -> HostPolicy:
        """The policy of every workflow without an override: defaults + ``[policy]``."""
        return effective_policy(self.file_policy)

    def policy_for(self, workflow: str) -> HostPolicy:
        """The effective policy of `workflow`: defaults + ``[policy]`` + its override."""
        override = self.workflow_policies.get(workflow, {})
        return effective_policy(self.file_policy, override)

    def policy_values(self, workflow: str | None = None) -> list[PolicyValue]:
        """Every effective policy value of `workflow` (or the file's) with its source."""
        return policy_values(
            self.file_policy, self.workflow_policies.get(workflow, {}) if workflow else None
        )

    def build_connectors(self) -> list[Connector]:
        """An instance of every configured connector, in name order; the first that cannot be
        built closes the ones built before and raises its `ConfigurationError`."""
        built: list[Connector] = []
        for build in self.deferred_connectors().values():
            try:
                built.append(build())
            except BaseException:
                for connector in built:
                    getattr(connector, "close", lambda: None)()
                raise
        return built

    def deferred_connectors(self) -> dict[str, Callable[[], Connector]]:
        """A builder of every configured connector, in name order; nothing is built here.

        Calling one builds its instance (an MCP server is started or connected to)
        and raises a `ConfigurationError` naming the connector when it cannot: a
        package that is not installed, a server that cannot be started or reached.
        """
        return {name: partial(self._build, name) for name in sorted(self.connectors)}

    def _build(self, name: str) -> Connector:
        instance = self.connectors[name]
        try:
            return instance.build()
        except ImportError as exc:
            raise ConfigurationError(
                f"{self.path}: connectors.{name} (type {instance.type.name!r}) needs a package "
                f"that is not installed ({exc.name}); install keep-sdk[{instance.type.name}]"
            ) from None

    def redact(self, text: str) -> str:
        """`text` with every secret of this configuration masked."""
        return Redactor(self.secrets)(text)


def _read(path: Path) -> dict[str, Any]:
    try:
        return tomllib.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise ConfigurationError(f"cannot read {path}: {exc.strerror or exc}") from None
    except UnicodeDecodeError as exc:
        raise ConfigurationError(
            f"{path} is not UTF-8 text (byte {exc.start}); save it as UTF-8"
        ) from None
    except tomllib.TOMLDecodeError as exc:
        raise ConfigurationError(
            f"{path} is not valid TOML: {exc}; see docs/configuration.md for the format"
        ) from None


def load_config(
    path: Path | ConfigSource | None,
    *,
    types: Mapping[str, ConnectorType],
    environ: Mapping[str, str] | None = None,
) -> KeepConfig:
    """Read and check the configuration at `path` (None, or a `ConfigSource` that found
    none: an empty configuration). A `ConfigSource` (`find_config`) is kept as the
    result's `source`; a plain path is recorded as ``given``.

    Every relative path in the file (``secrets_file``, each connector's path settings,
    see `keep_sdk.config._paths`) is resolved against the file's folder.

    Every problem (TOML syntax, unknown keys, a connector type that is not
    installed, bad settings, a missing secret, a bad policy value) is collected
    into one `ConfigurationError` naming the file, each key and what to write.
    """
    if isinstance(path, ConfigSource):
        source_of = path
    elif path is not None:
        source_of = ConfigSource(path=absolute(path), reason="given")
    else:
        return KeepConfig()
    if source_of.path is None:
        return KeepConfig(source=source_of)
    path = source_of.path
    folder = path.parent
    raw = _read(path)
    try:
        top = KeepConfigFile.model_validate(raw)
    except ValidationError as exc:
        raise config_error(path, explain(exc)) from None
    problems: list[str] = []
    source = SecretSource(environ=environ)
    if top.secrets_file is not None:
        secrets_path = folder / Path(top.secrets_file).expanduser()
        try:
            source = SecretSource(
                environ=environ,
                file_values=load_secrets_file(secrets_path),
                file_path=secrets_path,
            )
        except ConfigurationError as exc:
            problems.append(f"secrets_file: {exc}")
    file_policy, found = checked_policy(top.policy, prefix="policy")
    problems += found
    workflow_policies: dict[str, dict[str, Any]] = {}
    for workflow, settings in sorted(top.workflows.items()):
        override, found = checked_policy(settings.policy, prefix=f"workflows.{workflow}.policy")
        problems += found
        workflow_policies[workflow] = override
    instances: dict[str, ConfiguredInstance] = {}
    for name, entry in sorted(top.connectors.items()):
        where = f"connectors.{name}"
        kind = types.get(entry.type)
        if kind is None:
            known = ", ".join(sorted(types)) or "none"
            problems.append(
                f"{where}.type: unknown connector type {entry.type!r}; installed types: "
                f"{known} (a plugin can add more)"
            )
            continue
        try:
            settings = resolve_references(entry.settings(), source, where=where)
        except ConfigurationError as exc:
            problems.append(str(exc))
            continue
        try:
            checked = kind.settings_model().model_validate(settings)
            instances[name] = ConfiguredInstance(name, kind, resolve_paths(checked, folder))
        except ValidationError as exc:
            problems += explain(exc, prefix=where)
    if problems:
        raise config_error(path, problems)
    return KeepConfig(
        path=path,
        connectors=instances,
        file_policy=file_policy,
        workflow_policies=workflow_policies,
        secrets=tuple(source.used),
        source=source_of,
    )
