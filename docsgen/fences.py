"""The fenced blocks of a tutorial page, and what a test does with each.

A tutorial is executable: `tests/docs/test_tutorials.py` runs its blocks, in
order, in an empty temporary directory. The conventions (also stated in
``docs/tutorials/index.md``):

- a block with ``title="PATH"`` (any language) is a file: it is written to PATH;
  the same PATH again replaces it (a fixed version of a script);
- a ``sh`` block without a title is commands: the block runs as one bash
  script (so ``RUN=$(...)`` on one line is there for the next), and each
  logical line (backslash continuations joined, ``#`` comments skipped) must
  exit 0, or the code a trailing ``# exits N`` comment names (`shell_script`);
- a ``python`` block without a title is a script run with the SDK's Python, and
  must exit 0 (use ``assert`` to check what the reader is told);
- every other block (``text``, ``console``, ``json``...) is only shown;
- a line ``--8<-- "PATH"`` inside a block is the file at PATH (relative to the
  repository; ``pymdownx.snippets`` shows it on the site), so a tutorial can show a
  shipped fixture without a second copy of it; ``--8<-- "PATH:NAME"`` is the part of
  that file between its ``--8<-- [start:NAME]`` and ``--8<-- [end:NAME]`` lines, and
  marker lines are never part of what is shown.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

__all__ = ["Block", "Command", "blocks", "commands", "shell_script"]

_FENCE = re.compile(
    r"^(?P<indent>[ \t]*)(?P<ticks>`{3,})[ \t]*(?P<lang>[\w+-]*)(?P<info>[^\n`]*)\n"
    r"(?P<body>.*?)^(?P=indent)(?P=ticks)[ \t]*$",
    re.MULTILINE | re.DOTALL,
)
_TITLE = re.compile(r'title="(?P<title>[^"]+)"')
_EXITS = re.compile(r"\s+#\s*exits\s+(?P<code>\d+)\s*$")
_SNIPPET = re.compile(r'^--8<-- "(?P<path>[^"]+)"\n?$')
_MARKER = re.compile(r"--8<-- \[(?:start|end):[\w-]+\]")
ROOT = Path(__file__).parents[1]
"""The repository: where a snippet's PATH is read from (``base_path`` in mkdocs.yml)."""


@dataclass(frozen=True)
class Block:
    """One fenced block: what the test does with it (`action`), its language, the
    file it is (`path`, for files) and its text, and the line it starts on."""

    action: Literal["file", "sh", "python", "show"]
    lang: str
    path: str | None
    text: str
    line: int


@dataclass(frozen=True)
class Command:
    """One shell command of a ``sh`` block and the exit code it must end with."""

    text: str
    exit_code: int


def blocks(markdown: str) -> list[Block]:
    """The fenced blocks of `markdown`, in order, each with its action."""
    found = []
    for match in _FENCE.finditer(markdown):
        indent = match["indent"]
        body = "".join(
            _expand(line[len(indent) :] if line.startswith(indent) else line)
            for line in match["body"].splitlines(keepends=True)
        )
        title = _TITLE.search(match["info"])
        lang = match["lang"]
        line = markdown.count("\n", 0, match.start()) + 1
        action: Literal["file", "sh", "python", "show"]
        if title:
            action = "file"
        elif lang in ("sh", "python"):
            action = "sh" if lang == "sh" else "python"
        else:
            action = "show"
        found.append(Block(action, lang, title["title"] if title else None, body, line))
    return found


def _expand(line: str) -> str:
    """`line`, or the file (or the named section of it) a ``--8<-- "PATH[:NAME]"`` line
    names. Raises ValueError when the section is not in the file."""
    snippet = _SNIPPET.match(line)
    if snippet is None:
        return line
    path, _, section = snippet["path"].partition(":")
    lines = (ROOT / path).read_text(encoding="utf-8").splitlines(keepends=True)
    if not section:
        return "".join(text for text in lines if not _MARKER.search(text))
    start = next((n for n, text in enumerate(lines) if f"[start:{section}]" in text), None)
    end = next((n for n, text in enumerate(lines) if f"[end:{section}]" in text), None)
    if start is None or end is None or end < start:
        raise ValueError(f"{path} has no section {section!r} ([start:{section}]…[end:{section}])")
    return "".join(text for text in lines[start + 1 : end] if not _MARKER.search(text))


def commands(block: Block) -> list[Command]:
    """The commands of a ``sh`` block: continuations joined, comments skipped."""
    joined: list[str] = []
    pending = ""
    for raw in block.text.splitlines():
        line = pending + (raw.strip() if pending else raw)
        if line.endswith("\\"):
            pending = line[:-1].rstrip() + " "
            continue
        pending = ""
        if line.strip() and not line.lstrip().startswith("#"):
            joined.append(line.strip())
    found = []
    for line in joined:
        exits = _EXITS.search(line)
        code = int(exits["code"]) if exits else 0
        found.append(Command(line[: exits.start()] if exits else line, code))
    return found


def shell_script(block: Block) -> str:
    """A bash script running the commands of `block` in order that stops, exit 1
    and the command on stderr, at the first command that ends with an exit code
    other than the one it must end with."""
    lines = ["set -uo pipefail"]
    for command in commands(block):
        quoted = command.text.replace("'", "'\\''")
        lines += [
            command.text,
            f"rc=$?; if [ $rc -ne {command.exit_code} ]; then",
            f"  echo 'exit '$rc' (expected {command.exit_code}): {quoted}' >&2; exit 1",
            "fi",
        ]
    return "\n".join(lines) + "\n"
