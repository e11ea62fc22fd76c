"""The PostgreSQL test server: found, started and stopped; missing binaries fail, never skip."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

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


def _modes(paths: list[Path]) -> dict[Path, tuple[int, int, int]]:
    return {p: (p.stat().st_mode, p.stat().st_uid, p.stat().st_gid) for p in paths}


@pytest.mark.postgres
def test_starting_a_server_changes_no_permission_outside_its_own_folder(tmp_path: Path) -> None:
    """Issue 17, defect 11: run as root it used to add world-execute to every parent of its
    directory up to ``/``."""
    given = tmp_path / "pg"
    temp = Path(tempfile.gettempdir()).resolve()
    watched = sorted({tmp_path, *tmp_path.parents, temp, *temp.parents})
    before = _modes(watched)
    server = PostgresServer.start(given)
    try:
        url = server.create_database("keep_probe")
        engine = sa.create_engine(url.replace("postgresql://", "postgresql+psycopg://"))
        try:
            with engine.connect() as conn:
                assert conn.execute(sa.text("SELECT 1")).scalar_one() == 1
                assert conn.execute(sa.text("SHOW fsync")).scalar_one() == "on"
        finally:
            engine.dispose()
        assert _modes(watched) == before
        assert server.data_dir is not None
        if os.geteuid() == 0:
            assert server.owned_dir is not None
            assert server.owned_dir.parent == temp
            assert server.data_dir.is_relative_to(server.owned_dir)
        else:
            assert server.data_dir.is_relative_to(given)
    finally:
        server.stop()
    assert _modes(watched) == before
    if server.owned_dir is not None:
        assert not server.owned_dir.exists()


def test_as_root_an_unreachable_temporary_directory_is_refused_not_chmodded(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    closed = tmp_path / "closed"
    closed.mkdir(mode=0o700)
    closed.chmod(0o700)
    monkeypatch.setattr(postgres_module.os, "geteuid", lambda: 0)
    monkeypatch.setattr(postgres_module, "_postgres_ids", lambda: (os.getuid(), os.getgid()))
    monkeypatch.setattr(postgres_module.tempfile, "gettempdir", lambda: str(closed))
    with pytest.raises(PostgresUnavailable, match="set TMPDIR"):
        postgres_module._server_home(tmp_path / "pg")
    assert closed.stat().st_mode & 0o777 == 0o700


@pytest.mark.postgres
def test_a_server_started_without_fsync_keeps_commits_through_an_immediate_stop(
    tmp_path: Path,
) -> None:
    """``fsync=False`` (the test session's server): commits reach the operating system, so a
    server stopped without a checkpoint (``immediate``, as a crash) still has them."""
    server = PostgresServer.start(tmp_path / "pg", fsync=False)
    try:
        url = server.create_database("keep_probe").replace("postgresql://", "postgresql+psycopg://")
        engine = sa.create_engine(url)
        try:
            with engine.begin() as conn:
                assert conn.execute(sa.text("SHOW fsync")).scalar_one() == "off"
                conn.execute(sa.text("CREATE TABLE kept (n int)"))
                conn.execute(sa.text("INSERT INTO kept VALUES (1), (2)"))
        finally:
            engine.dispose()
        server.restart("immediate")
        engine = sa.create_engine(url)
        try:
            with engine.connect() as conn:
                assert conn.execute(sa.text("SELECT sum(n) FROM kept")).scalar_one() == 3
                assert conn.execute(sa.text("SHOW fsync")).scalar_one() == "off"
        finally:
            engine.dispose()
    finally:
        server.stop()
