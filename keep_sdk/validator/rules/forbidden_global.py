"""forbidden-global: code generation, module loading, ``with``, prototype tricks, missing globals.

What it does: flags, anywhere in the script, ``eval``, ``Function`` (and the routes to
them: ``globalThis.eval``, ``.constructor.constructor``, the ``constructor``
of a function literal), ``require``, dynamic ``import()``,
``import`` declarations, ``with`` statements, ``__proto__`` and
``setPrototypeOf``; and browser or Node.js globals the sandbox does not have
(``fetch``, ``setTimeout``, ``process``, ``window``, ``URL``...); in handler
code, any free name that neither the script declares nor the sandbox's
``globalThis`` has (``keep_sdk.contract.globals``).

Why is this bad? The sandbox has no module loader, no timers and no network:
all access goes through ``ctx``. Generated code and prototype tricks defeat
static checks and are disabled at run time, and missing globals are
ReferenceErrors that only show up when the run fails.
"""

from __future__ import annotations

from collections.abc import Iterator

from keep_sdk.validator._diagnostics import Severity
from keep_sdk.validator.facts import Analysis, GlobalUseKind
from keep_sdk.validator.rule import Finding, Rule, RuleMeta
from keep_sdk.validator.rules._support import why
from keep_sdk.validator.rules.legacy_format import LEGACY_GLOBALS

__all__ = ["rule"]

_MESSAGE_IDS = {
    "import": "import",
    "import()": "import",
    "with": "with",
    "__proto__": "prototype",
    "setPrototypeOf": "prototype",
}

META = RuleMeta(
    id="forbidden-global",
    severity=Severity.ERROR,
    description="The script uses code generation, module loading, `with` or missing globals.",
    rationale=why(__doc__),
    messages={
        "forbidden": "`{name}` is forbidden in workflow scripts",
        "import": "workflow scripts cannot import modules (`{name}`)",
        "with": "`with` statements are forbidden",
        "prototype": "`{name}` prototype manipulation is forbidden",
        "unavailable": "`{name}` does not exist in the sandbox",
    },
    hint="Write plain code: no eval, Function, require or import; call operations through ctx.",
    hints={
        "forbidden": (
            "Write the logic as ordinary code instead of generating or loading it; everything "
            "external goes through ctx operations."
        ),
        "import": (
            "Write the code you need in this file (helper functions are fine) and use ctx "
            "connectors for external systems; there is no module loader."
        ),
        "with": "Refer to the object explicitly (obj.x) instead of using `with`.",
        "prototype": "Build plain objects and classes; do not change prototypes.",
        "unavailable": (
            "The sandbox has no network, timers, files or process: use ctx connector "
            "operations for external systems, and `wakeAt` in prepare's result to run later."
        ),
    },
)


def check(analysis: Analysis) -> Iterator[Finding]:
    """Each forbidden or unavailable global the scan found."""
    for use in analysis.globals:
        if use.kind is GlobalUseKind.UNAVAILABLE and use.name in LEGACY_GLOBALS:
            continue
        if use.kind is GlobalUseKind.UNAVAILABLE:
            message_id = "unavailable"
        elif use.kind is GlobalUseKind.FORBIDDEN:
            message_id = _MESSAGE_IDS.get(use.name, "forbidden")
        else:
            continue
        yield Finding(message_id, use.node, {"name": use.name}, use.handler)


rule = Rule(META, check)
