from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from keep_sdk.conformance.postgres import PostgresServer
from tests.runtime.harness import Env, make_env


@pytest.fixture(params=["memory", "sqlite"])
def store_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    if request.param == "memory":
        return "memory://"
    return f"sqlite:///{tmp_path / 'keep.db'}"


@pytest.fixture
def env(store_url: str) -> Iterator[Env]:
    environment = make_env(store_url)
    yield environment
    environment.store.close()


@pytest.fixture
def fresh_postgres_url(postgres_server: PostgresServer) -> str:
    """A new, empty database on the session's PostgreSQL server."""
    return postgres_server.create_database(f"runtime_{uuid.uuid4().hex[:12]}")
