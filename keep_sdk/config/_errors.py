"""One readable message for a bad ``keep.toml``: the file, each key, what to write."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import ValidationError

from keep_sdk.connectors.secrets import Secret
from keep_sdk.errors import ConfigurationError

__all__ = ["config_error", "explain"]

_MAX_SHOWN = 60


def _key(prefix: str, loc: tuple[int | str, ...]) -> str:
    key = prefix
    for part in loc:
        if isinstance(part, int):
            key += f"[{part}]"
        elif part.startswith(("function-", "union[", "str", "json-or-python")) or part in (
            "Secret",
            "is-instance[Secret]",
        ):
            continue
        else:
            key += f".{part}" if key else part
    return key or "(top level)"


def _shown(value: Any) -> str:
    if isinstance(value, Secret):
        return "a secret reference"
    text = repr(value)
    return text if len(text) <= _MAX_SHOWN else text[: _MAX_SHOWN - 3] + "..."


def explain(exc: ValidationError, *, prefix: str = "") -> list[str]:
    """One line per problem: ``key: what is wrong (got ...)``; a secret's value never shows."""
    lines: list[str] = []
    for error in exc.errors(include_url=False):
        key = _key(prefix, tuple(error["loc"]))
        kind = error["type"]
        given = error.get("input")
        if kind == "missing":
            line = f"{key} is required but missing"
        elif kind == "extra_forbidden":
            line = f"{key} is not a known setting; remove it or check its spelling"
        elif kind == "secret_inlined":
            line = f"{key}: {error['msg']}"
        elif isinstance(given, Secret):
            line = f"{key} cannot take a secret reference; write the value itself"
        else:
            message = str(error["msg"]).removeprefix("Value error, ")
            line = f"{key}: {message} (got {_shown(given)})"
        if line not in lines:
            lines.append(line)
    return lines


def config_error(path: Path | str, problems: list[str]) -> ConfigurationError:
    """The `ConfigurationError` for `problems` found in the configuration file `path`."""
    if len(problems) == 1:
        return ConfigurationError(f"{path}: {problems[0]}")
    return ConfigurationError(f"{path} has {len(problems)} problems:\n  " + "\n  ".join(problems))
