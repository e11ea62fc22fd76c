"""keep_sdk: validate, sandbox and durably run LLM-written JavaScript workflows.

```python
import keep_sdk

report = keep_sdk.validate(source)              # the installed plugins' connectors and rules
with keep_sdk.Installation.open("sqlite:///.keep/keep.db") as installation:
    installation.runtime.deploy(source)         # plugins, keep.toml, store, connectors: one root
```

Every name but the errors (`keep_sdk.errors`, one small module) is imported on
first use (PEP 562), so ``import keep_sdk`` stays cheap.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from keep_sdk import errors as _errors

if TYPE_CHECKING:
    from keep_sdk.app import Installation as Installation
    from keep_sdk.errors import *  # noqa: F403
    from keep_sdk.plugins.facade import load_workflow as load_workflow
    from keep_sdk.plugins.facade import open_store as open_store
    from keep_sdk.plugins.facade import validate as validate
    from keep_sdk.plugins.hookspecs import hookimpl as hookimpl
    from keep_sdk.runtime import PersonActions as PersonActions
    from keep_sdk.runtime import Runtime as Runtime
    from keep_sdk.scheduler import Scheduler as Scheduler
    from keep_sdk.validator import Diagnostic as Diagnostic
    from keep_sdk.validator import Report as Report

_HOMES: dict[str, str] = {
    "Diagnostic": "keep_sdk.validator",
    "Installation": "keep_sdk.app",
    "PersonActions": "keep_sdk.runtime",
    "Report": "keep_sdk.validator",
    "Runtime": "keep_sdk.runtime",
    "Scheduler": "keep_sdk.scheduler",
    "hookimpl": "keep_sdk.plugins.hookspecs",
    "load_workflow": "keep_sdk.plugins.facade",
    "open_store": "keep_sdk.plugins.facade",
    "validate": "keep_sdk.plugins.facade",
    **dict.fromkeys(_errors.__all__, "keep_sdk.errors"),
}
"""Where each public name lives; `__getattr__` imports it from there on first use."""

__all__ = sorted(_HOMES)


def __getattr__(name: str) -> Any:
    if name == "__version__":
        from importlib.metadata import version

        return version("keep-sdk")
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module 'keep_sdk' has no attribute {name!r}")
    value = getattr(importlib.import_module(home), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return [*__all__, "__version__"]
