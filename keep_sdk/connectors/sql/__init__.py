"""The SQL connector (extra ``keep-sdk[sql]``): named statements with bound parameters only.

`SqlSettings` is the ``[connectors.<name>] type = "sql"`` table; `build` makes the
connector (a PostgreSQL URL needs psycopg, the ``postgres`` extra).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from keep_sdk.connectors.sql._settings import SqlLookup, SqlOperation, SqlSettings

if TYPE_CHECKING:
    from keep_sdk.connectors.base import Connector

__all__ = ["SqlLookup", "SqlOperation", "SqlSettings", "build"]


def build(name: str, settings: SqlSettings) -> Connector:
    """The SQL connector `name` configured by `settings`."""
    from keep_sdk.connectors.sql._connector import build as build_sql

    return build_sql(name, settings)
