"""docs/cli.md lists every command of the group, with its exit codes and machine output."""

from __future__ import annotations

from pathlib import Path

from keep_sdk.cli.group import COMMANDS

DOC = (Path(__file__).parents[2] / "docs" / "cli.md").read_text()


def test_every_command_is_in_the_synopsis_and_the_table() -> None:
    synopsis = DOC.split("```", 2)[1]
    table = DOC.split("## Every command: exit codes and `--json`", 1)[1].split("\n## ", 1)[0]
    rows = [line for line in table.splitlines() if line.startswith("| `")]
    for command in COMMANDS:
        name = command.name
        assert name is not None
        assert f"keep {name}" in synopsis or f"|{name}" in synopsis or f"{name}|" in synopsis, name
        assert any(
            row.startswith(f"| `{name}") or f"/ `{name}" in row.split("|")[1] for row in rows
        ), name


def test_every_json_option_is_documented_in_the_table() -> None:
    table = DOC.split("## Every command: exit codes and `--json`", 1)[1].split("\n## ", 1)[0]
    for command in COMMANDS:
        options = {opt for p in command.params for opt in getattr(p, "opts", [])}
        if "--json" not in options:
            continue
        row = next(r for r in table.splitlines() if r.startswith("| `") and f"`{command.name}" in r)
        assert "`--json`" in row, command.name
