"""keep_sdk: validate, sandbox and durably run LLM-written JavaScript workflows."""

from typing import Any

from keep_sdk import errors as _errors
from keep_sdk.errors import *  # noqa: F403
from keep_sdk.plugins.hookspecs import hookimpl as hookimpl

__all__ = sorted([*_errors.__all__, "hookimpl"])


def __getattr__(name: str) -> Any:
    if name == "__version__":
        from importlib.metadata import version

        return version("keep-sdk")
    raise AttributeError(f"module 'keep_sdk' has no attribute {name!r}")
