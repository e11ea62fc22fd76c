"""Built-in store plugin: registers the memory, sqlite and postgresql URL schemes."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from keep_sdk.plugins.hookspecs import hookimpl


def open_memory(url: str, **options: Any) -> Any:
    """A fresh `MemoryStore` (``memory://``; nothing after the scheme is used)."""
    from keep_sdk.stores.memory import MemoryStore

    return MemoryStore(**options)


def open_sql(url: str, **options: Any) -> Any:
    """A `SqlStore` for ``sqlite:///path`` or ``postgresql://…``."""
    from keep_sdk.stores.sql import SqlStore

    return SqlStore(url, **options)


@hookimpl
def register_stores() -> Mapping[str, Callable[..., Any]]:
    return {
        "memory": open_memory,
        "sqlite": open_sql,
        "postgresql": open_sql,
        "postgres": open_sql,
    }
