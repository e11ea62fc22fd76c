"""Secret references in ``keep.toml``: ``${ENV_VAR}`` and ``${file:NAME}``, resolved to `Secret`s.

A string holding a reference becomes a `Secret` whose value is the string with
each reference filled in (``"Bearer ${CRM_TOKEN}"``), and whose `parts` are the
referenced values, so redaction masks the bare token too. ``$${`` writes a
literal ``${``. The secrets file is a TOML table of strings that only its
owner may read (mode 0600 or stricter); anything looser is refused.
"""

from __future__ import annotations

import os
import re
import stat
import tomllib
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from keep_sdk.connectors.secrets import Secret
from keep_sdk.errors import ConfigurationError

__all__ = ["SecretSource", "load_secrets_file", "resolve_references"]

_REFERENCE = re.compile(r"\$(\$?)\{([^{}]*)\}")
_ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


class SecretSource:
    """Where references are looked up: the environment and an optional secrets file."""

    def __init__(
        self,
        *,
        environ: Mapping[str, str] | None = None,
        file_values: Mapping[str, str] | None = None,
        file_path: Path | None = None,
    ) -> None:
        self.environ = os.environ if environ is None else environ
        self.file_values = dict(file_values or {})
        self.file_path = file_path
        self.used: list[Secret] = []

    def lookup(self, reference: str, *, where: str) -> str:
        """The value of ``${reference}`` for the key `where`; `ConfigurationError` if absent."""
        if reference.startswith("file:"):
            name = reference.removeprefix("file:")
            if self.file_path is None:
                raise ConfigurationError(
                    f"{where}: ${{{reference}}} refers to the secrets file, but none is "
                    'configured; add secrets_file = "keep.secrets.toml" at the top of keep.toml'
                )
            if name not in self.file_values:
                raise ConfigurationError(
                    f"{where}: ${{{reference}}} is not in the secrets file {self.file_path}; "
                    f'add a line {name} = "..." to it'
                )
            return self.file_values[name]
        if not _ENV_NAME.match(reference):
            raise ConfigurationError(
                f"{where}: ${{{reference}}} is not a reference; write ${{ENV_VAR}} or "
                "${file:NAME} (and $${ for a literal ${)"
            )
        if reference not in self.environ:
            raise ConfigurationError(
                f"{where}: the environment variable {reference} is not set; export it before "
                "running keep (or use ${file:NAME} and a secrets file)"
            )
        return self.environ[reference]


def _resolve_string(text: str, source: SecretSource, where: str) -> str | Secret:
    parts: list[str] = []
    found = False

    def fill(match: re.Match[str]) -> str:
        nonlocal found
        if match.group(1):
            return "${" + match.group(2) + "}"
        found = True
        value = source.lookup(match.group(2), where=where)
        parts.append(value)
        return value

    resolved = _REFERENCE.sub(fill, text)
    if not found:
        return resolved
    secret = Secret(resolved, source=where, parts=tuple(parts))
    source.used.append(secret)
    return secret


def resolve_references(data: Any, source: SecretSource, *, where: str = "") -> Any:
    """`data` (parsed TOML) with every string holding a reference turned into a `Secret`."""
    if isinstance(data, str):
        return _resolve_string(data, source, where or "(top level)")
    if isinstance(data, dict):
        return {
            key: resolve_references(value, source, where=f"{where}.{key}" if where else key)
            for key, value in data.items()
        }
    if isinstance(data, list):
        return [
            resolve_references(value, source, where=f"{where}[{i}]") for i, value in enumerate(data)
        ]
    return data


def load_secrets_file(path: Path) -> dict[str, str]:
    """The ``NAME = "value"`` pairs of the secrets file at `path`, which must be mode 0600.

    Its content never appears in an error: a parse error names the line only.
    """
    try:
        mode = path.stat().st_mode
    except OSError as exc:
        raise ConfigurationError(
            f"cannot read the secrets file {path}: {exc.strerror}; create it with mode 0600"
        ) from None
    if stat.S_IMODE(mode) & 0o077:
        raise ConfigurationError(
            f"the secrets file {path} is readable by others (mode {stat.S_IMODE(mode):04o}); "
            f"run `chmod 600 {path}`"
        )
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise ConfigurationError(f"cannot read the secrets file {path}: {exc.strerror}") from None
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        at = f" ({exc})" if isinstance(exc, tomllib.TOMLDecodeError) else ""
        raise ConfigurationError(
            f'the secrets file {path} is not valid TOML{at}; write one NAME = "value" per line'
        ) from None
    for name, value in data.items():
        if not isinstance(value, str):
            raise ConfigurationError(
                f'the secrets file {path}: {name} must be a string; write {name} = "..."'
            )
    return data
