"""`open_store(url)`: pick a store by URL scheme from the openers it is given.

Without `openers`, only the built-in schemes are known. `keep_sdk.open_store`
(and every ``keep`` command) passes the openers of the installed plugins, so
schemes a plugin registers through ``register_stores`` work there too.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, cast

from keep_sdk.errors import ConfigurationError

if TYPE_CHECKING:
    from keep_sdk.stores._protocol import Store

__all__ = ["BUILTIN_OPENERS", "DEFAULT_STORE_URL", "open_store", "store_scheme"]

DEFAULT_STORE_URL = "sqlite:///.keep/keep.db"
"""Where `open_store` keeps data when given no URL: ``./.keep/keep.db`` in the working directory."""


def _open_memory(url: str, **options: Any) -> Any:
    from keep_sdk.stores.memory import MemoryStore

    return MemoryStore(**options)


def _open_sql(url: str, **options: Any) -> Any:
    from keep_sdk.stores.sql import SqlStore

    return SqlStore(url, **options)


BUILTIN_OPENERS: Mapping[str, Callable[..., Any]] = MappingProxyType(
    {
        "memory": _open_memory,
        "sqlite": _open_sql,
        "postgresql": _open_sql,
        "postgres": _open_sql,
    }
)
"""Opener by URL scheme: ``memory://`` (a fresh `MemoryStore`; nothing after the scheme is
used), ``sqlite:///path`` and ``postgresql://…`` (a `SqlStore`, psycopg 3)."""


def store_scheme(url: str) -> str:
    """The scheme of `url` without a driver suffix: ``postgresql+psycopg://`` → ``postgresql``."""
    scheme, sep, _ = url.partition("://")
    if not sep or not scheme:
        raise ConfigurationError(
            f"store URL {url!r} has no scheme; use memory://, sqlite:///path/to/keep.db "
            "or postgresql://user@host/db"
        )
    return scheme.split("+", 1)[0].lower()


def open_store(
    url: str | None = None,
    *,
    openers: Mapping[str, Callable[..., Any]] | None = None,
    **options: Any,
) -> Store:
    """Open the store at `url` (default ``sqlite:///.keep/keep.db``).

    `openers` maps URL schemes to store factories (default `BUILTIN_OPENERS`);
    `options` (``clock``, ``fault_hook``…) go to the opener. Raises
    `ConfigurationError` for an unknown scheme.
    """
    target = url or DEFAULT_STORE_URL
    scheme = store_scheme(target)
    known = BUILTIN_OPENERS if openers is None else openers
    opener = known.get(scheme)
    if opener is None:
        schemes = ", ".join(f"{s}://" for s in sorted(known))
        raise ConfigurationError(
            f"no store is registered for the URL scheme {scheme!r} (in {target!r}); "
            f"known schemes: {schemes}. Install the plugin that provides it."
        )
    store = opener(target, **options) if options else opener(target)
    return cast("Store", store)
