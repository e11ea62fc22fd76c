"""reserved-name: the script declares or names an identifier the host reserves.

What it does: reports every identifier that starts with ``__keep`` (escapes such as
``\\u005f_keep`` decoded): a declaration in any form (``var``, ``let``, ``const``,
``function``, ``class``, a parameter, a ``catch`` binding, an import alias, a
destructuring pattern) or a reference.

Why is this bad? The host rewrites the script before running it and calls functions of
its own from the rewritten code (the return marker locates a returned value). A binding
of the script with a host name would stand in for the host's function, so host code
would call script code. The sandbox already makes its names unspellable; the validator
refuses the whole prefix so no version of the host can be shadowed.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Final

from keep_sdk.contract.globals import RESERVED_PREFIX
from keep_sdk.validator._diagnostics import Severity
from keep_sdk.validator.facts import Analysis
from keep_sdk.validator.rule import Finding, Rule, RuleMeta
from keep_sdk.validator.rules._support import why

__all__ = ["decoded", "rule"]

_IDENTIFIERS: Final = frozenset(
    {"identifier", "shorthand_property_identifier", "shorthand_property_identifier_pattern"}
)
_ESCAPE: Final = re.compile(r"\\u(?:\{([0-9a-fA-F]+)\}|([0-9a-fA-F]{4}))")

META = RuleMeta(
    id="reserved-name",
    severity=Severity.ERROR,
    description="The script declares or names an identifier the host reserves (`__keep…`).",
    rationale=why(__doc__),
    messages={"reserved": "`{name}` starts with `{prefix}`, a prefix the host reserves"},
    hint="Rename it: names starting with `__keep` belong to the host.",
)


def decoded(name: str) -> str:
    """`name` with its ``\\uXXXX`` and ``\\u{X}`` escapes decoded."""

    def one(match: re.Match[str]) -> str:
        code = int(match[1] or match[2], 16)
        return chr(code) if code <= 0x10FFFF else match[0]

    return _ESCAPE.sub(one, name) if "\\" in name else name


def check(analysis: Analysis) -> Iterator[Finding]:
    """Every identifier of the script whose name starts with the reserved prefix."""
    if analysis.syntax:
        return
    stack = [analysis.source.root]
    while stack:
        node = stack.pop()
        if node.type in _IDENTIFIERS:
            name = decoded(analysis.text(node))
            if name.startswith(RESERVED_PREFIX):
                handler = analysis.handler_at(node)
                yield Finding("reserved", node, {"name": name, "prefix": RESERVED_PREFIX}, handler)
        stack.extend(reversed(node.children))


rule = Rule(META, check)
