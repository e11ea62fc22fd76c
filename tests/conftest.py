"""Shared fixtures: pytester for plugin tests, and a real PostgreSQL server per session.

The server is started by the tests (initdb into a temporary directory, run as
the ``postgres`` user, loopback port, stopped at the end) unless
``KEEP_TEST_POSTGRES_URL`` names one to use. Missing binaries FAIL the
postgres tests with a clear message: CI must never skip them silently.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from keep_sdk.conformance.postgres import PostgresServer, PostgresUnavailable

pytest_plugins = ["pytester"]


@pytest.fixture(scope="session")
def postgres_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[PostgresServer]:
    """A PostgreSQL server for this test session."""
    server = PostgresServer.from_env()
    if server is None:
        try:
            server = PostgresServer.start(tmp_path_factory.mktemp("postgres"))
        except PostgresUnavailable as exc:
            pytest.fail(f"PostgreSQL is required for the postgres tests: {exc}", pytrace=False)
    yield server
    server.stop()


@pytest.fixture(scope="session")
def postgres_url(postgres_server: PostgresServer) -> str:
    """An empty database on the session's server, shared by tests that use fresh names."""
    return postgres_server.create_database("keep_suite")
