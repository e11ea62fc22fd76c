"""``keep --version``, ``keep --help`` of one command, ``keep publish``, ``keep notify`` and
``keep status`` import only what they use (issue 31)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from keep_sdk.cli import cli

HEAVY = (
    "sqlalchemy",
    "pydantic",
    "tree_sitter",
    "quickjs",
    "httpx",
    "mcp",
    "starlette",
    "rich",
    "keep_sdk.app",
    "keep_sdk.model",
)
"""Modules the version of the command line needs none of."""

_PROBE = """
import json, sys
from keep_sdk.cli import main
try:
    main(sys.argv[1:])
except SystemExit:
    pass
print(json.dumps(sorted(sys.modules)), file=sys.stderr)
"""


RUNNING = ("quickjs", "tree_sitter", "keep_sdk.sandbox", "keep_sdk.validator", "keep_sdk.runtime")
"""What runs or checks a script: a command that only writes to the store imports none of it."""

NOT_FOR_SQLITE = (
    "sqlalchemy.dialects.postgresql",
    "psycopg",
    "asyncpg",
    "jsonschema",
    "referencing",
)
"""Modules a command writing to a SQLite store needs none of: the PostgreSQL dialect and
drivers, and the JSON Schema checker (keep.toml's argument schemas are checked by whoever
builds a connector)."""

UNNAMED_CONNECTORS = tuple(
    f"keep_sdk.connectors.{kind}"
    for kind in ("http", "sql", "mail", "mcp", "exec_adapter", "_exec_settings", "_toml_settings")
)
"""The keep.toml connector types' packages: a store without keep.toml loads none of them."""

DEMO = Path(__file__).parents[2] / "fixtures" / "workflows" / "demo" / "invoices.js"


def _imported(*args: str, cwd: Path | None = None) -> set[str]:
    done = subprocess.run(
        [sys.executable, "-c", _PROBE, *args],
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
        cwd=cwd,
    )
    return set(json.loads(done.stderr.strip().splitlines()[-1]))


def _running(imported: set[str]) -> list[str]:
    return sorted(m for m in imported if m.split(".")[0] in RUNNING or m.startswith(RUNNING))


def _not_for_sqlite(imported: set[str]) -> list[str]:
    unused = (*NOT_FOR_SQLITE, *UNNAMED_CONNECTORS)
    return sorted(m for m in imported if m.startswith(unused))


def test_version_imports_no_heavy_module() -> None:
    imported = _imported("--version")
    assert "click" in imported
    assert sorted(imported & set(HEAVY)) == []


@pytest.mark.parametrize("command", ["schema", "validate", "status"])
def test_a_commands_help_imports_its_module_and_not_the_others(command: str) -> None:
    imported = _imported(command, "--help")
    assert "keep_sdk.cli.serve" not in imported
    assert "keep_sdk.cli.repairing" not in imported
    assert "keep_sdk.console" not in imported


def test_every_command_is_listed_and_resolves() -> None:
    from keep_sdk.cli.group import COMMAND_MODULES, COMMANDS, cli

    assert [c.name for c in COMMANDS] == list(COMMAND_MODULES)
    assert sorted(cli.commands) == sorted(COMMAND_MODULES)


@pytest.fixture(scope="module")
def deployed(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    folder = tmp_path_factory.mktemp("startup")
    store = f"sqlite:///{folder / 'keep.db'}"
    done = CliRunner().invoke(cli, ["deploy", str(DEMO), "--store", store])
    assert done.exit_code == 0, done.output
    return folder, store


def test_publish_imports_nothing_that_runs_a_script(deployed: tuple[Path, str]) -> None:
    folder, store = deployed
    payload = folder / "payload.json"
    payload.write_text(json.dumps({"from": "a@example.com", "amount": "5 EUR"}))
    imported = _imported(
        *("publish", "invoice.received", "--message-id", "startup", "--title", "T"),
        *("--payload", f"@{payload}", "--store", store),
        cwd=folder,
    )
    assert "keep_sdk.stores.sql" in imported
    assert _running(imported) == []
    assert _not_for_sqlite(imported) == []
    events = CliRunner().invoke(cli, ["events", "--store", store, "--json"])
    assert "startup" in events.output


def test_notify_of_an_unknown_key_imports_nothing_that_runs_a_script(
    deployed: tuple[Path, str],
) -> None:
    folder, store = deployed
    imported = _imported("notify", "kc-" + "0" * 40, "--result", "{}", "--store", store, cwd=folder)
    assert "keep_sdk.stores.sql" in imported
    assert _running(imported) == []
    assert _not_for_sqlite(imported) == []


SUITES = ("keep_sdk.conformance", "keep_sdk.cases", "keep_sdk.repair", "yaml")
"""The store suite, the case runner and the repair loop: only the commands that certify,
test or repair import them (≈ 180 ms of a start-up)."""


@pytest.mark.parametrize("command", [["status"], ["events"], ["runs"], ["ledger"]])
def test_a_command_that_reads_the_store_imports_no_suite(
    deployed: tuple[Path, str], command: list[str]
) -> None:
    folder, store = deployed
    imported = _imported(*command, "--store", store, "--json", cwd=folder)
    assert "keep_sdk.cli.outputs" in imported
    assert sorted(m for m in imported if m.startswith(SUITES)) == []


def test_the_wait_default_a_help_shows_is_the_lease_time_to_live() -> None:
    from keep_sdk.cli._options import LEASE_WAIT_S
    from keep_sdk.scheduler import DEFAULT_LEASE_TTL_S

    assert LEASE_WAIT_S == DEFAULT_LEASE_TTL_S


def test_the_partial_indexes_keep_their_condition_on_each_dialect() -> None:
    """The PostgreSQL condition, attached at creation, is in PostgreSQL's DDL as in SQLite's."""
    from sqlalchemy import create_mock_engine
    from sqlalchemy.sql.ddl import ExecutableDDLElement

    from keep_sdk.stores.sql import metadata

    def partial_indexes(url: str) -> set[str]:
        shown: list[str] = []

        def record(sql: ExecutableDDLElement, *_: object, **__: object) -> None:
            shown.append(str(sql.compile(dialect=engine.dialect)))

        engine = create_mock_engine(url, record)
        metadata.create_all(engine, checkfirst=False)
        return {" ".join(s.split()) for s in shown if "INDEX" in s and " WHERE " in s}

    sqlite = partial_indexes("sqlite://")
    postgresql = partial_indexes("postgresql+psycopg://")
    assert len(sqlite) == 9
    assert {s.replace("!=", "<>") for s in postgresql} == {s.replace("!=", "<>") for s in sqlite}
