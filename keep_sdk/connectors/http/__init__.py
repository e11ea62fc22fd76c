"""The HTTP connector (extra ``keep-sdk[http]``): an HTTP API's operations declared in keep.toml.

`HttpSettings` is the ``[connectors.<name>] type = "http"`` table; `build` makes
the connector. httpx is imported only by `build`, so settings load without it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from keep_sdk.connectors.http._settings import HttpOperation, HttpReconcile, HttpSettings

if TYPE_CHECKING:
    from keep_sdk.connectors.base import Connector

__all__ = ["HttpOperation", "HttpReconcile", "HttpSettings", "build"]


def build(name: str, settings: HttpSettings) -> Connector:
    """The HTTP connector `name` configured by `settings` (needs httpx)."""
    from keep_sdk.connectors.http.connector import build as build_http

    return build_http(name, settings)
