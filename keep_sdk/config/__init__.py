"""``keep.toml``: connector instances, the host policy and per-workflow overrides, secrets.

`find_config` says which file applies and why (a `ConfigSource`: ``--config``,
``$KEEP_CONFIG``, the working folder or a parent, next to the store),
`load_config` checks it into a `KeepConfig` (one `ConfigurationError` listing
every problem, every relative path resolved against the file's folder), and
`install_log_redaction` keeps its secrets out of every log record.
"""

from keep_sdk.config._find import (
    CONFIG_ENV,
    CONFIG_NAME,
    ConfigReason,
    ConfigSource,
    find_config,
)
from keep_sdk.config._load import ConfiguredInstance, KeepConfig, load_config
from keep_sdk.config._paths import RelativePaths, resolve_paths
from keep_sdk.config._redaction import install_log_redaction
from keep_sdk.config.policy import PolicyValue

__all__ = [
    "CONFIG_ENV",
    "CONFIG_NAME",
    "ConfigReason",
    "ConfigSource",
    "ConfiguredInstance",
    "KeepConfig",
    "PolicyValue",
    "RelativePaths",
    "find_config",
    "install_log_redaction",
    "load_config",
    "resolve_paths",
]
