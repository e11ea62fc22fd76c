"""Which ``keep.toml`` applies, and why: `find_config` and the `ConfigSource` it answers.

The order is ``--config PATH``, ``$KEEP_CONFIG``, ``keep.toml`` in the working
folder or the nearest of its parents (up to the filesystem root), then
``keep.toml`` next to a SQLite store. The first found wins; when none is, the
answer lists every place looked.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from keep_sdk.errors import ConfigurationError

__all__ = [
    "CONFIG_ENV",
    "CONFIG_NAME",
    "ConfigReason",
    "ConfigSource",
    "absolute",
    "find_config",
]

CONFIG_ENV = "KEEP_CONFIG"
CONFIG_NAME = "keep.toml"

ConfigReason = Literal[
    "--config",
    "KEEP_CONFIG",
    "working folder",
    "parent folder",
    "next to the store",
    "given",
    "none found",
]
"""Why a file is the configuration: named by ``--config`` or ``$KEEP_CONFIG``, found in the
working folder, in one of its parents or next to the store, given to `load_config` by a
program; or ``none found``."""

_WHY: dict[ConfigReason, str] = {
    "--config": "named by --config",
    "KEEP_CONFIG": "named by $KEEP_CONFIG",
    "working folder": "found in the working folder",
    "parent folder": "found in a parent of the working folder",
    "next to the store": "found next to the store",
    "given": "given to load_config",
    "none found": "none found",
}


class ConfigSource(BaseModel):
    """The configuration file in use and why; `path` is None when none was found.

    `looked` lists, in order, every file looked for before the answer (with
    ``none found``: every place keep looked, so a message can say where)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    path: Path | None = Field(description="The keep.toml in use (absolute), or None.")
    reason: ConfigReason = Field(description="Why it is the one in use.")
    looked: tuple[Path, ...] = Field(
        default=(), description="Files looked for, in lookup order, before this answer."
    )

    @property
    def why(self) -> str:
        """The reason in words: ``found in the working folder``, ``named by --config``..."""
        return _WHY[self.reason]

    def places(self) -> str:
        """The folders looked in, a walk up written once: ``/a/b and its parents, /a/b/.keep``."""
        chains: list[list[Path]] = []
        for file in self.looked:
            folder = file.parent
            if chains and chains[-1][-1].parent == folder and chains[-1][-1] != folder:
                chains[-1].append(folder)
            else:
                chains.append([folder])
        return ", ".join(
            f"{chain[0]} and its parents" if len(chain) > 1 else str(chain[0]) for chain in chains
        )

    def describe(self) -> str:
        """One phrase for messages: ``keep.toml read: PATH (found in the working folder)``, or
        ``no keep.toml found (looked in ...)``."""
        if self.path is None:
            where = self.places()
            return f"no {CONFIG_NAME} found" + (f" (looked in {where})" if where else "")
        return f"{CONFIG_NAME} read: {self.path} ({self.why})"


def absolute(path: Path | str) -> Path:
    """`path` with ``~`` expanded, made absolute and normalised (``a/../b`` is ``b``)."""
    return Path(os.path.abspath(Path(path).expanduser()))


def _named(value: Path | str, how: ConfigReason) -> ConfigSource:
    path = absolute(value)
    if not path.is_file():
        raise ConfigurationError(
            f"{how} names {path}, which is not a file; create it or fix the path"
        )
    return ConfigSource(path=path, reason=how)


def find_config(
    *,
    explicit: Path | None = None,
    store_dir: Path | None = None,
    environ: Mapping[str, str] | None = None,
    cwd: Path | None = None,
) -> ConfigSource:
    """The configuration file to use and why: `explicit` (``--config``), else
    ``$KEEP_CONFIG`` (from `environ`, default the process environment), else ``keep.toml``
    in `cwd` (default the working folder) or its nearest parent that has one, else
    ``keep.toml`` in `store_dir` (the folder of a SQLite store); else ``none found`` with
    every place looked.

    A file named by ``--config`` or ``KEEP_CONFIG`` that does not exist is a
    `ConfigurationError`."""
    env = os.environ if environ is None else environ
    if explicit is not None:
        return _named(explicit, "--config")
    named = env.get(CONFIG_ENV)
    if named:
        return _named(named, "KEEP_CONFIG")
    start = absolute(cwd if cwd is not None else Path.cwd())
    looked: list[Path] = []
    for folder in (start, *start.parents):
        candidate = folder / CONFIG_NAME
        if candidate.is_file():
            reason: ConfigReason = "working folder" if folder == start else "parent folder"
            return ConfigSource(path=candidate, reason=reason, looked=tuple(looked))
        looked.append(candidate)
    if store_dir is not None:
        candidate = absolute(store_dir) / CONFIG_NAME
        if candidate not in looked:
            if candidate.is_file():
                return ConfigSource(
                    path=candidate, reason="next to the store", looked=tuple(looked)
                )
            looked.append(candidate)
    return ConfigSource(path=None, reason="none found", looked=tuple(looked))
