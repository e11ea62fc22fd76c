"""Only ``keep_sdk/cli/`` spells ``keep …`` commands: the status read model and every other
package say what a person can do as data (`keep_sdk.status.Remedy`)."""

from __future__ import annotations

import ast
import re
from pathlib import Path

from keep_sdk.cli import cli
from keep_sdk.cli.remedies import command
from keep_sdk.runtime import ResolveChoice
from keep_sdk.status import Remedy, RemedyKind

PACKAGE = Path(__file__).parents[2] / "keep_sdk"
STATUS = PACKAGE / "status"

_NAMES = "|".join(re.escape(name) for name in sorted(cli.commands, key=len)[::-1])
COMMAND = re.compile(rf"\bkeep (?:{_NAMES})\b")
"""``keep`` and one of its commands."""

NOT_COMMANDS = {("validator/_diagnostics.py", "keep validate report")}
"""Strings that start like a command but are not one: the validator report schema's title."""


def _docstrings(tree: ast.Module) -> set[int]:
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
            first = node.body[0] if node.body else None
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
                found.add(id(first.value))
    return found


def _strings(path: Path) -> list[tuple[int, str]]:
    """(line, text) of each string in `path`'s code, docstrings left out; an f-string is
    its text with each substitution as ``{}``."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    docs = _docstrings(tree)
    inside = {id(v) for n in ast.walk(tree) if isinstance(n, ast.JoinedStr) for v in n.values}
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.JoinedStr):
            text = "".join(v.value if isinstance(v, ast.Constant) else "{}" for v in node.values)
            found.append((node.lineno, text))
        elif (
            isinstance(node, ast.Constant)
            and isinstance(node.value, str)
            and id(node) not in docs | inside
        ):
            found.append((node.lineno, node.value))
    return found


def test_the_walk_sees_the_commands_the_cli_spells() -> None:
    spelled = [text for line, text in _strings(PACKAGE / "cli" / "remedies.py")]
    assert sum(bool(COMMAND.match(text)) for text in spelled) >= len(RemedyKind)


def test_the_status_read_model_spells_no_command() -> None:
    sources = sorted(STATUS.rglob("*.py"))
    assert len(sources) >= 4
    wrong = [
        f"{path.relative_to(PACKAGE)}:{line}: {text!r}"
        for path in sources
        for line, text in _strings(path)
        if COMMAND.search(text)
    ]
    assert not wrong, "\n".join(wrong)


def test_only_the_command_line_starts_a_string_with_a_keep_command() -> None:
    wrong = [
        f"{path.relative_to(PACKAGE)}:{line}: {text!r}"
        for path in sorted(PACKAGE.rglob("*.py"))
        if path.relative_to(PACKAGE).parts[0] != "cli"
        for line, text in _strings(path)
        if COMMAND.match(text) and (path.relative_to(PACKAGE).as_posix(), text) not in NOT_COMMANDS
    ]
    assert not wrong, "spell commands in keep_sdk/cli/ (a Remedy is data):\n" + "\n".join(wrong)


def test_every_remedy_is_spelled_as_a_command_of_the_cli_for_its_store() -> None:
    store = "sqlite:////tmp/a b/keep.db"
    for kind in RemedyKind:
        remedy = Remedy(
            kind=kind,
            workflow="invoices",
            run_id="run_1",
            permission="sheets.write",
            choice=ResolveChoice.SKIP,
            correlation_key="kc-1",
        )
        spelled = command(remedy, store_url=store)
        name = spelled.split()[1]
        assert name in cli.commands, spelled
        assert "--store 'sqlite:////tmp/a b/keep.db'" in spelled, spelled
        assert "--store" not in command(remedy, store_url="sqlite:///.keep/keep.db")


def test_a_remedy_never_spells_the_store_password() -> None:
    """The person fills the password in (a placeholder in capitals): status output is
    pasted into tickets, chats and repair prompts."""
    remedy = Remedy(kind=RemedyKind.RESUME, workflow="invoices")
    spelled = command(remedy, store_url="postgresql://keep:s3cret@db.internal:5432/keep")
    assert (
        spelled == "keep resume invoices --store postgresql://keep:PASSWORD@db.internal:5432/keep"
    )
