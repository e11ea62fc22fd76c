"""The one type every generator returns."""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["Page"]


@dataclass(frozen=True)
class Page:
    """A generated page: `path` relative to ``docs/`` (``reference/cli.md``), its nav
    `title`, and its Markdown `content`."""

    path: str
    title: str
    content: str
