"""Relative paths in ``keep.toml`` mean paths relative to the file's folder.

A connector type's settings model says which of its fields are paths by
defining ``resolved_against(folder) -> Self`` (`RelativePaths`): the settings
with each relative path made absolute against `folder`. `resolve_paths` calls
it, once, when keep.toml is loaded; a settings model without it has no paths.
"""

from __future__ import annotations

from pathlib import Path
from typing import Protocol, runtime_checkable

from pydantic import BaseModel

__all__ = ["RelativePaths", "resolve_paths"]


@runtime_checkable
class RelativePaths(Protocol):
    """Settings with fields that are paths (a folder, a file, a program)."""

    def resolved_against(self, folder: Path) -> BaseModel:
        """These settings with every relative path made absolute against `folder`."""
        ...


def resolve_paths(settings: BaseModel, folder: Path) -> BaseModel:
    """`settings` as written in a keep.toml in `folder`: its relative paths resolved there."""
    if isinstance(settings, RelativePaths):
        return settings.resolved_against(folder)
    return settings
