from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from keep_sdk.conformance.postgres import PostgresServer
from tests.durable.harness import DurableEnv, make_env


@pytest.fixture(params=["memory", "sqlite", "postgres"])
def store_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    if request.param == "memory":
        return "memory://"
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'keep.db'}"
    server: PostgresServer = request.getfixturevalue("postgres_server")
    return server.create_database(f"durable_{uuid.uuid4().hex[:12]}")


@pytest.fixture
def env(store_url: str) -> Iterator[DurableEnv]:
    environment = make_env(store_url)
    yield environment
    environment.store.close()
