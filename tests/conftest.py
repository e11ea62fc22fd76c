"""Shared fixtures: pytester for plugin tests, and a real PostgreSQL server per session.

The server is started by the tests (initdb into a temporary directory, run as
the ``postgres`` user, loopback port, stopped at the end) unless
``KEEP_TEST_POSTGRES_URL`` names one to use. Missing binaries FAIL the
postgres tests with a clear message: CI must never skip them silently.

No test reads outside the repository: an audit hook records every file or
directory this process opens outside it (and outside Python, the temporary
directory and system paths), and the test during which that happened fails.
Child processes are not watched.
"""

from __future__ import annotations

import os
import site
import sys
import sysconfig
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from keep_sdk.conformance.postgres import PostgresServer, PostgresUnavailable

pytest_plugins = ["pytester"]


@pytest.fixture(scope="session")
def postgres_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[PostgresServer]:
    """A PostgreSQL server for this test session."""
    server = PostgresServer.from_env()
    if server is None:
        try:
            server = PostgresServer.start(tmp_path_factory.mktemp("postgres"), fsync=False)
        except PostgresUnavailable as exc:
            pytest.fail(f"PostgreSQL is required for the postgres tests: {exc}", pytrace=False)
    yield server
    server.stop()


@pytest.fixture(scope="session")
def postgres_url(postgres_server: PostgresServer) -> str:
    """An empty database on the session's server, shared by tests that use fresh names."""
    return postgres_server.create_database("keep_suite")


ROOT = Path(__file__).resolve().parents[1]
_WATCHED = frozenset({"open", "os.listdir", "os.scandir", "sqlite3.connect"})
_OWN = tuple(str(ROOT / part) + os.sep for part in ("tests", "keep_sdk", "benchmarks"))
_allowed: tuple[str, ...] = ()
_outside: list[str] = []


def _folder(path: str) -> str:
    return os.path.join(os.path.realpath(path), "")


_NOT_OURS = "an unknown place"


def _caller() -> str:
    """The innermost frame of the repository's own code (not this file's, not the venv's).

    A read with no such frame is the test runner's own (pytest, a plugin, a mutation
    tool walking its copy of the tree), not a test's, and is not reported."""
    frame = sys._getframe(1)
    while frame is not None:
        filename = frame.f_code.co_filename
        if filename.startswith(_OWN) and filename != __file__:
            return f"{os.path.relpath(filename, ROOT)}:{frame.f_lineno}"
        frame = frame.f_back
    return _NOT_OURS


def _audit(event: str, args: tuple[object, ...]) -> None:
    """Record a watched event of the repository's code whose path is outside every allowed
    folder; never raise."""
    if event not in _WATCHED or not _allowed:
        return
    try:
        target = args[0] if args else None
        if target is None or isinstance(target, int):
            return
        name = os.fsdecode(target)  # type: ignore[arg-type]
        if event == "sqlite3.connect" and (not name or name.startswith((":", "file:"))):
            return
        if os.path.join(os.path.abspath(name), "").startswith(_allowed):
            return
        if _folder(name).startswith(_allowed):
            return
        caller = _caller()
        if caller != _NOT_OURS:
            _outside.append(f"{event} {name!r} at {caller}")
    except Exception:
        return


def pytest_configure(config: pytest.Config) -> None:
    global _allowed
    first = not _allowed
    folders = {
        str(ROOT),
        sys.prefix,
        sys.base_prefix,
        sys.exec_prefix,
        sys.base_exec_prefix,
        *sysconfig.get_paths().values(),
        *site.getsitepackages(),
        tempfile.gettempdir(),
        os.environ.get("PYTEST_DEBUG_TEMPROOT") or tempfile.gettempdir(),
        "/usr",
        "/etc",
        "/proc",
        "/sys",
        "/dev",
    }
    if config.option.basetemp:
        folders.add(str(config.option.basetemp))
    _allowed = tuple(sorted({_folder(f) for f in folders} | set(_allowed)))
    if first:
        sys.addaudithook(_audit)


def _take_outside() -> list[str]:
    found = list(dict.fromkeys(_outside))
    _outside.clear()
    return found


@pytest.fixture(autouse=True)
def _reads_stay_inside_the_repository() -> Iterator[None]:
    """Fail a test that read a file outside the repository (fixtures/ is the place for data)."""
    yield
    found = _take_outside()
    if found:
        pytest.fail(
            "read outside the repository (copy the data into fixtures/): " + "; ".join(found),
            pytrace=False,
        )


def pytest_sessionfinish(session: pytest.Session) -> None:
    """Reads after the last test's check (wider fixtures' teardown) fail the session."""
    found = _take_outside()
    if found:
        session.exitstatus = pytest.ExitCode.TESTS_FAILED
        reporter = session.config.pluginmanager.get_plugin("terminalreporter")
        if reporter is not None:
            reporter.write_line("read outside the repository: " + "; ".join(found), red=True)
