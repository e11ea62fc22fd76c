"""The names a workflow script can use as globals in the sandbox.

`SANDBOX_GLOBALS` is every property name reachable from the sandbox's
``globalThis`` (its own properties and those of its prototype chain), in
every phase. Any other free name is a ``ReferenceError`` when the script
runs. It is data about the runtime, kept here so the validator reads it
without importing the sandbox; ``tests/contract/test_globals.py`` starts the
real sandbox and checks that its global object has exactly these names.
"""

from __future__ import annotations

from typing import Final

__all__ = ["HOST_GLOBALS", "RESERVED_PREFIX", "RETURN_MARKER", "SANDBOX_GLOBALS"]

SANDBOX_GLOBALS: Final = frozenset(
    {
        "AggregateError",
        "Array",
        "ArrayBuffer",
        "AsyncDisposableStack",
        "BigInt",
        "BigInt64Array",
        "BigUint64Array",
        "Boolean",
        "DOMException",
        "DataView",
        "Date",
        "DisposableStack",
        "Error",
        "EvalError",
        "Float16Array",
        "Float32Array",
        "Float64Array",
        "Function",
        "Infinity",
        "Int16Array",
        "Int32Array",
        "Int8Array",
        "InternalError",
        "Iterator",
        "JSON",
        "Keep",
        "Map",
        "Math",
        "NaN",
        "Number",
        "Object",
        "Promise",
        "Proxy",
        "RangeError",
        "ReferenceError",
        "Reflect",
        "RegExp",
        "Set",
        "String",
        "SuppressedError",
        "Symbol",
        "SyntaxError",
        "TypeError",
        "URIError",
        "Uint16Array",
        "Uint32Array",
        "Uint8Array",
        "Uint8ClampedArray",
        "WeakMap",
        "WeakSet",
        "__defineGetter__",
        "__defineSetter__",
        "__lookupGetter__",
        "__lookupSetter__",
        "__proto__",
        "atob",
        "btoa",
        "console",
        "constructor",
        "decodeURI",
        "decodeURIComponent",
        "encodeURI",
        "encodeURIComponent",
        "escape",
        "globalThis",
        "hasOwnProperty",
        "isFinite",
        "isNaN",
        "isPrototypeOf",
        "parseFloat",
        "parseInt",
        "performance",
        "propertyIsEnumerable",
        "queueMicrotask",
        "toLocaleString",
        "toString",
        "undefined",
        "unescape",
        "valueOf",
    }
)
"""Every name the sandbox's ``globalThis`` resolves (own and inherited properties)."""

RESERVED_PREFIX: Final = "__keep"
"""Names the host reserves: a script may not declare (or name) an identifier that starts
with it (the validator's ``reserved-name`` rule), so no binding of the script can stand
in for one the host's rewrite of the script calls."""

RETURN_MARKER: Final = "__keepReturn"
"""The prefix of the function the host's rewrite wraps every returned value in
(`sandbox/returns.py`): the global is ``__keepReturn_<nonce>``, the nonce drawn at
random once per process, so no script can name it in its source."""

HOST_GLOBALS: Final = frozenset({RETURN_MARKER})
"""Prefixes of the globals the host's own rewrite of a script calls (``return
__keepReturn_<nonce>(LINE, COL, (EXPR))`` locates a returned value): present on
``globalThis`` but not for scripts, so they are not in `SANDBOX_GLOBALS`."""
