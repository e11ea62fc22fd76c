"""``keep.toml``: connector instances, the host policy and per-workflow overrides, secrets.

`find_config` says which file applies, `load_config` checks it into a
`KeepConfig` (one `ConfigurationError` listing every problem), and
`install_log_redaction` keeps its secrets out of every log record.
"""

from keep_sdk.config.load import (
    CONFIG_ENV,
    CONFIG_NAME,
    ConfiguredInstance,
    KeepConfig,
    find_config,
    load_config,
)
from keep_sdk.config.policy import PolicyValue
from keep_sdk.config.redaction import install_log_redaction

__all__ = [
    "CONFIG_ENV",
    "CONFIG_NAME",
    "ConfiguredInstance",
    "KeepConfig",
    "PolicyValue",
    "find_config",
    "install_log_redaction",
    "load_config",
]
