"""implicit-code: a construct that makes JavaScript run script code without a visible call.

What it does: flags, anywhere in the script, accessor properties (``get x()``,
``set x(v)`` in object literals and classes), ``toJSON``, ``valueOf``,
``toString`` and ``then`` defined as code, ``Symbol.toPrimitive`` and the other
well-known symbol hooks, properties defined from descriptors that are not
plain data (``Object.defineProperty``/``defineProperties``/``create``,
``Reflect.defineProperty``, ``__defineGetter__``), ``using`` and ``await
using`` declarations and ``DisposableStack``, ``Proxy``, and built-ins
replaced by the script (``Array.prototype.map = ...``, ``JSON.stringify = ...``).

Why is this bad? The runtime serializes every connector argument and every
handler result, converts values, awaits results and disposes ``using``
bindings: each of these runs such code without a call in the source, so the
checks (one terminal mutation, phases, grants) never saw it. A ``toJSON`` on a
mutation's argument can make a second mutation; a getter can swap a handler
after validation. An accepted script must be one whose every call the
validator read.
"""

from __future__ import annotations

from collections.abc import Iterator

from keep_sdk.validator.diagnostics import Severity
from keep_sdk.validator.facts import Analysis
from keep_sdk.validator.rule import Finding, Rule, RuleMeta
from keep_sdk.validator.rules._support import why

__all__ = ["rule"]

META = RuleMeta(
    id="implicit-code",
    severity=Severity.ERROR,
    description="The script defines code that JavaScript runs implicitly, without a call.",
    rationale=why(__doc__),
    messages={
        "accessor": (
            "`{what}` is an accessor: reading or writing the property runs code the "
            "validator cannot follow"
        ),
        "conversion": (
            "`{what}` is defined as code: JavaScript calls it implicitly (`toJSON` when the "
            "value is serialized, `valueOf`/`toString` when it is converted, `then` when it "
            "is awaited)"
        ),
        "symbol": "`{what}` defines a hook that JavaScript calls implicitly",
        "define": (
            "`{what}` defines a property from a descriptor that is not plain data (an "
            "accessor, or one the validator cannot read)"
        ),
        "using": ("`{what}` registers a disposer that runs implicitly when its block ends"),
        "proxy": "`Proxy` runs its handler's traps implicitly on every access",
        "patched": "`{what}` replaces a built-in that other code calls",
    },
    hint=(
        "Compute values first and pass plain data (objects, arrays, strings, numbers); call "
        "functions explicitly where their work is needed."
    ),
    hints={
        "accessor": (
            "Use a plain data property (`{{ total: a + b }}`), computed before it is read, or "
            "a function called explicitly (`total()`)."
        ),
        "conversion": (
            "Build the plain value you want first (`const body = {{ to, subject }}`) and pass "
            "that; give the method another name and call it explicitly if you need it."
        ),
        "symbol": (
            "Use plain data and call functions explicitly (an array instead of a custom "
            "iterator, an explicit conversion function instead of `Symbol.toPrimitive`)."
        ),
        "define": (
            "Assign the value directly (`obj.key = value`), or pass a descriptor literal with "
            "only `value`, `writable`, `enumerable` and `configurable`."
        ),
        "using": (
            "Declare the resource with `const` and release it explicitly in a `finally` "
            "block: `const r = open(); try {{ ... }} finally {{ r.close(); }}`."
        ),
        "proxy": "Use a plain object, or functions called explicitly.",
        "patched": (
            "Leave built-ins as they are: declare a helper function with its own name and call it."
        ),
    },
)


def check(analysis: Analysis) -> Iterator[Finding]:
    """Each implicit-code construct the scan found."""
    for fact in analysis.implicit_code:
        yield Finding(fact.reason, fact.node, {"what": fact.what}, fact.handler)


rule = Rule(META, check)
