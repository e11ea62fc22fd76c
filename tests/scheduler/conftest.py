"""Fixtures the scheduler tests share."""

from __future__ import annotations

import pytest

from keep_sdk.conformance import PostgresServer


@pytest.fixture(params=["sqlite", pytest.param("postgresql", marks=pytest.mark.postgres)])
def database(request: pytest.FixtureRequest) -> str | None:
    """None for a SQLite file, or a fresh PostgreSQL database's URL."""
    if request.param == "sqlite":
        return None
    server: PostgresServer = request.getfixturevalue("postgres_server")
    return server.create_database("keep_scheduler")
