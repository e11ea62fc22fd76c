"""The PostgreSQL test server: found, started and stopped; missing binaries fail, never skip."""

from __future__ import annotations

import pytest
import sqlalchemy as sa

from keep_sdk.conformance import PostgresServer, PostgresUnavailable
from keep_sdk.conformance import postgres as postgres_module


def test_missing_binaries_raise_a_clear_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(postgres_module.shutil, "which", lambda name: None)
    monkeypatch.setattr(postgres_module.glob, "glob", lambda pattern: [])
    with pytest.raises(PostgresUnavailable, match="install PostgreSQL"):
        postgres_module.find_postgres_bin()


def test_the_session_fixture_fails_instead_of_skipping(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    def missing() -> None:
        raise PostgresUnavailable("initdb was not found (test)")

    monkeypatch.delenv(postgres_module.TEST_URL_ENV, raising=False)
    monkeypatch.setattr(postgres_module, "find_postgres_bin", missing)
    pytester.makeconftest("from tests.conftest import postgres_server, postgres_url\n")
    pytester.makepyfile(test_pg="def test_needs_pg(postgres_url):\n    pass\n")
    result = pytester.inline_run("-p", "no:cacheprovider")
    passed, skipped, failed = result.listoutcomes()
    assert (len(passed), len(skipped), len(failed)) == (0, 0, 1)
    assert "PostgreSQL is required for the postgres tests" in str(failed[0].longrepr)


@pytest.mark.postgres
def test_a_database_on_the_session_server_is_empty_and_usable(
    postgres_server: PostgresServer,
) -> None:
    url = postgres_server.create_database("keep_probe")
    engine = sa.create_engine(url.replace("postgresql://", "postgresql+psycopg://"))
    try:
        with engine.connect() as conn:
            assert conn.execute(sa.text("SELECT 1")).scalar_one() == 1
            tables = sa.inspect(conn).get_table_names()
        assert tables == []
    finally:
        engine.dispose()


def test_a_borrowed_server_comes_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(postgres_module.TEST_URL_ENV, "postgresql://u@h:5/postgres")
    server = PostgresServer.from_env()
    assert server is not None
    assert (server.admin_url, server.data_dir) == ("postgresql://u@h:5/postgres", None)
    monkeypatch.delenv(postgres_module.TEST_URL_ENV)
    assert PostgresServer.from_env() is None
