"""The SQL store (SQLAlchemy 2 Core) for SQLite and PostgreSQL, and its schema."""

from keep_sdk.stores.sql._engine import create_store_engine, sqlalchemy_url
from keep_sdk.stores.sql._schema import SCHEMA_VERSION, UPGRADES, metadata
from keep_sdk.stores.sql.store import AcceptedRollback, SqlStore, accept_rollback

__all__ = [  # noqa: RUF022 (plain sorted(), as tests/test_public_api.py checks)
    "AcceptedRollback",
    "SCHEMA_VERSION",
    "SqlStore",
    "UPGRADES",
    "accept_rollback",
    "create_store_engine",
    "metadata",
    "sqlalchemy_url",
]
