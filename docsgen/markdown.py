"""Small helpers to write Markdown safely: table cells and inline code."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

__all__ = ["cell", "code", "table"]


def cell(text: str) -> str:
    """`text` as one Markdown table cell: no newline, no unescaped ``|``."""
    return " ".join(text.split()).replace("|", "\\|")


def code(text: str) -> str:
    """`text` as inline code, with a fence long enough for the backticks it holds."""
    ticks = "`"
    while ticks in text:
        ticks += "`"
    pad = " " if text.startswith("`") or text.endswith("`") else ""
    return f"{ticks}{pad}{text}{pad}{ticks}"


def table(header: Sequence[str], rows: Iterable[Sequence[str]]) -> str:
    """A Markdown table; every cell is passed through `cell`."""
    lines = [
        "| " + " | ".join(header) + " |",
        "|" + "---|" * len(header),
    ]
    lines += ["| " + " | ".join(cell(c) for c in row) + " |" for row in rows]
    return "\n".join(lines) + "\n"
