"""Built-in validator plugin: registers the rule catalog."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from keep_sdk.plugins.hookspecs import hookimpl


@hookimpl
def register_rules() -> Sequence[Any]:
    return ()
