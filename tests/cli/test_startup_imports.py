"""``keep --version`` and ``keep --help`` of one command import only what they use (issue 31)."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

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


def _imported(*args: str) -> set[str]:
    done = subprocess.run(
        [sys.executable, "-c", _PROBE, *args],
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
    )
    return set(json.loads(done.stderr.strip().splitlines()[-1]))


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
