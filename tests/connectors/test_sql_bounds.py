"""The SQL connector's bounds: rows and bytes counted while fetching, one deadline per call."""

from __future__ import annotations

import time
import tracemalloc
from collections.abc import Iterator
from pathlib import Path

import pytest

from keep_sdk.connectors.base import Connector
from keep_sdk.connectors.sql import SqlSettings, build
from keep_sdk.errors import PreconditionFailed, TransientError

MANY = (
    "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < 2000000) "
    "SELECT x, :pad AS pad FROM c"
)
SLOW = {
    "sqlite": "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c "
    "WHERE x < 1000000000) SELECT count(*) AS n FROM c",
    "postgres": "SELECT pg_sleep(30) IS NULL AS n",
}
PAD = {"type": "object", "properties": {"pad": {"type": "string"}}, "required": ["pad"]}


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def database(request: pytest.FixtureRequest, tmp_path: Path) -> tuple[str, str]:
    if request.param == "sqlite":
        return "sqlite", f"sqlite:///{tmp_path / 'bounds.db'}"
    server = request.getfixturevalue("postgres_server")
    url = server.create_database("bounds").replace("postgresql://", "postgresql+psycopg://")
    return "postgres", url


@pytest.fixture
def db(database: tuple[str, str]) -> Iterator[Connector]:
    kind, url = database
    settings = SqlSettings.model_validate(
        {
            "url": url,
            "timeout_s": 1.0,
            "max_result_rows": 1000,
            "max_result_bytes": 64 * 1024,
            "operations": {
                "many": {"kind": "read", "sql": MANY, "arguments": PAD},
                "slow": {"kind": "read", "sql": SLOW[kind]},
                "one": {"kind": "read", "sql": "SELECT 1 AS one"},
            },
        }
    )
    connector = build("db", settings)
    yield connector
    connector.close()  # type: ignore[attr-defined]


def test_a_result_past_max_result_rows_is_refused_while_fetching(db: Connector) -> None:
    tracemalloc.start()
    try:
        with pytest.raises(PreconditionFailed, match=r"more than 1000 rows \(max_result_rows\)"):
            db.invoke("many", {"pad": ""})
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 8 * 1024 * 1024
    assert db.invoke("one", {}) == [{"one": 1}]


def test_a_result_past_max_result_bytes_is_refused_while_fetching(db: Connector) -> None:
    with pytest.raises(PreconditionFailed, match="max_result_bytes"):
        db.invoke("many", {"pad": "p" * 1024})


def test_a_statement_past_timeout_s_is_stopped_and_the_connector_stays_usable(
    db: Connector,
) -> None:
    started = time.monotonic()
    with pytest.raises(TransientError, match=r"ran past timeout_s \(1 s\)"):
        db.invoke("slow", {})
    assert time.monotonic() - started < 10
    assert db.invoke("one", {}) == [{"one": 1}]
