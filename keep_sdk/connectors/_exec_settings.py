"""``[connectors.<name>] type = "exec"``: the operator's list of programs scripts may run.

A script never names a program: it names an adapter of this list
(``keep+exec://<adapter>/<path>?<query>``), and the list says which program
that is (an absolute path, a path relative to keep.toml, or a name looked up on
``$PATH`` once when the connector is built), its fixed arguments, and which
variables of the host environment it gets.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

from pydantic import Field, field_validator

from keep_sdk.connectors._settings import Settings, resolve_path

__all__ = ["DEFAULT_ENV", "ExecProgram", "ExecSettings"]

_ADAPTER = re.compile(r"^[a-z0-9][a-z0-9._-]{0,99}$")
_ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
DEFAULT_ENV: tuple[str, ...] = ("PATH", "LANG", "LC_ALL", "TZ")
"""The host variables an adapter gets when its table names none."""


class ExecProgram(Settings):
    """One adapter: ``[connectors.<name>.adapters.<adapter>]``."""

    program: str = Field(
        min_length=1,
        description="Absolute path, path relative to keep.toml (with a '/'), or a name looked "
        "up on $PATH once when keep starts.",
    )
    args: list[str] = Field(
        default_factory=list, description="Fixed arguments; a script cannot add any."
    )
    env: list[str] = Field(
        default_factory=lambda: list(DEFAULT_ENV),
        description="Names of host environment variables passed to the program; no other "
        "variable is passed.",
    )
    timeout_s: float | None = Field(
        default=None, gt=0, description="Seconds for one start or poll (default: the table's)."
    )

    @field_validator("env")
    @classmethod
    def _env(cls, value: list[str]) -> list[str]:
        for name in value:
            if not _ENV_NAME.match(name):
                raise ValueError(f"environment variable name {name!r} is not a valid name")
        return value


class ExecSettings(Settings):
    """Executable adapters as a connector: the allowed programs and their bounds."""

    description: str = Field(default="", description="Shown by `keep connectors`.")
    timeout_s: float = Field(
        default=60.0, gt=0, description="Seconds one start or poll of a program may take."
    )
    max_output_bytes: int = Field(
        default=1024 * 1024,
        ge=1024,
        le=64 * 1024 * 1024,
        description="Most bytes read from a program's stdout; more kills it (a failed call).",
    )
    adapters: dict[str, ExecProgram] = Field(
        description="The adapters scripts may name, by name (keep+exec://<name>/...)."
    )

    @field_validator("adapters")
    @classmethod
    def _names(cls, value: dict[str, ExecProgram]) -> dict[str, ExecProgram]:
        if not value:
            raise ValueError("declare at least one adapter under adapters.<name>")
        for name in value:
            if not _ADAPTER.match(name):
                raise ValueError(
                    f"adapter name {name!r} must be lowercase letters, digits, '.', '_' or '-'"
                )
        return value

    def resolved_against(self, folder: Path) -> ExecSettings:
        """These settings with each program written as a relative path made absolute
        against `folder` (a bare name stays a name, looked up on $PATH at build)."""
        adapters = {
            name: adapter.model_copy(update={"program": resolve_path(adapter.program, folder)})
            if os.sep in adapter.program or "/" in adapter.program
            else adapter
            for name, adapter in self.adapters.items()
        }
        return self.model_copy(update={"adapters": adapters})
