"""`open_store(url)`: pick a store by URL scheme, built-in or registered by a plugin."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, cast

from keep_sdk.errors import ConfigurationError

if TYPE_CHECKING:
    from keep_sdk.stores._protocol import Store

__all__ = ["DEFAULT_STORE_URL", "open_store", "store_scheme"]

DEFAULT_STORE_URL = "sqlite:///.keep/keep.db"
"""Where `open_store` keeps data when given no URL: ``./.keep/keep.db`` in the working directory."""


def store_scheme(url: str) -> str:
    """The scheme of `url` without a driver suffix: ``postgresql+psycopg://`` → ``postgresql``."""
    scheme, sep, _ = url.partition("://")
    if not sep or not scheme:
        raise ConfigurationError(
            f"store URL {url!r} has no scheme; use memory://, sqlite:///path/to/keep.db "
            "or postgresql://user@host/db"
        )
    return scheme.split("+", 1)[0].lower()


def open_store(url: str | None = None, **options: Any) -> Store:
    """Open the store at `url` (default ``sqlite:///.keep/keep.db``).

    Built-in schemes: ``memory://``, ``sqlite:///path``, ``postgresql://…``
    (psycopg 3). A plugin adds schemes through the ``register_stores`` hook.
    `options` (``clock``, ``fault_hook``…) go to the opener. Raises
    `ConfigurationError` for an unknown scheme.
    """
    from keep_sdk.plugins import default_plugins

    target = url or DEFAULT_STORE_URL
    scheme = store_scheme(target)
    openers = default_plugins().store_openers()
    opener = openers.get(scheme)
    if opener is None:
        known = ", ".join(f"{s}://" for s in sorted(openers))
        raise ConfigurationError(
            f"no store is registered for the URL scheme {scheme!r} (in {target!r}); "
            f"known schemes: {known}. Install the plugin that provides it."
        )
    store = opener(target, **options) if options else opener(target)
    return cast("Store", store)
