"""Built-in validator plugin: registers the rule catalog."""

from __future__ import annotations

from collections.abc import Sequence

from keep_sdk.plugins.hookspecs import hookimpl
from keep_sdk.validator.rule import Rule


@hookimpl
def register_rules() -> Sequence[Rule]:
    """The built-in rules (`keep_sdk.validator.rules.BUILTIN_RULES`)."""
    from keep_sdk.validator.rules import BUILTIN_RULES

    return BUILTIN_RULES
