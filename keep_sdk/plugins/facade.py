"""What `keep_sdk` exports at its root: validate, load a workflow, open a store, with the
installed plugins' registries unless `plugins` says otherwise.

``keep validate``, ``keep run`` and these functions read the same registries, so a
script the command line accepts is accepted here, and the other way round.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from keep_sdk.plugins._manager import KeepPlugins, default_plugins

if TYPE_CHECKING:
    from keep_sdk.model import HostPolicy
    from keep_sdk.stores import Store
    from keep_sdk.validator import Report
    from keep_sdk.workflow import Workflow

__all__ = ["load_workflow", "open_store", "validate"]


def validate(
    source: str,
    *,
    plugins: KeepPlugins | None = None,
    policy: HostPolicy | None = None,
    filename: str | None = None,
) -> Report:
    """Check a workflow script against the connectors and rules of `plugins`.

    `plugins` defaults to the installed plugins (`default_plugins`). Never raises
    for any input string; see `keep_sdk.validator.validate`.
    """
    return (plugins or default_plugins()).validate(source, policy=policy, filename=filename)


def load_workflow(
    source: str,
    *,
    plugins: KeepPlugins | None = None,
    policy: HostPolicy | None = None,
    filename: str | None = None,
) -> Workflow:
    """Validate `source` with `plugins` (default: installed) and return the `Workflow`.

    Raises `ScriptRejected` (with the report) when the validator reports any error.
    """
    return (plugins or default_plugins()).load_workflow(source, policy=policy, filename=filename)


def open_store(
    url: str | None = None, *, plugins: KeepPlugins | None = None, **options: Any
) -> Store:
    """Open the store at `url` (default ``sqlite:///.keep/keep.db``), any scheme `plugins` know.

    `options` (``clock``, ``fault_hook``…) go to the store's opener. Raises
    `ConfigurationError` for an unknown scheme.
    """
    return (plugins or default_plugins()).open_store(url, **options)
