"""implicit-code: code JavaScript runs without a visible call, where the runtime cannot
check what it does.

What it does: flags, anywhere in the script, the implicit constructs the runtime
cannot enforce: ``Proxy``, built-ins replaced by the script (``Array.prototype.map
= ...``, ``JSON.stringify = ...``), ``using`` and ``await using`` declarations and
``DisposableStack``, the well-known symbol hooks other than ``Symbol.toPrimitive``,
``Symbol.iterator`` and ``Symbol.asyncIterator``, and hooks whose code is not
written where they are defined (``obj.toJSON = helper``, a descriptor the validator
cannot read, ``__defineGetter__``). Accessors (``get``/``set``), ``toJSON``,
``valueOf``, ``toString``, ``then`` and the three symbol hooks are fine when their
code is written in place and makes no ctx call. It also flags every ctx call the
runtime will not approve as a call site of its phase: one in a getter, a hook, a
comparator, a replacer, a reviver, or a function the validator cannot see called.

Why is this bad? The runtime performs a ctx call only from a call site the
validator approved for the phase (an ordinary call in the handler, a helper it
calls, an array-method or promise callback), so a ctx call in implicit code is
refused at run time: the script would fail, so it is refused now. A replaced
built-in or a Proxy changes what calls the validator read actually do, and
disposers and exotic symbol hooks change the built-in algorithms the runtime
relies on; none of that can be checked at run time.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Final

import tree_sitter

from keep_sdk.validator._diagnostics import Severity
from keep_sdk.validator.facts import Analysis, CapabilityCall, ImplicitCode
from keep_sdk.validator.rule import Finding, Rule, RuleMeta
from keep_sdk.validator.rules._support import why
from keep_sdk.validator.sites import approved

__all__ = ["rule"]

META = RuleMeta(
    id="implicit-code",
    severity=Severity.ERROR,
    description=(
        "The script has code JavaScript runs implicitly that the runtime cannot check, or a "
        "ctx call the runtime will not approve."
    ),
    rationale=why(__doc__),
    messages={
        "unapproved": (
            "`{what}` is called from code the runtime does not run as an ordinary call of "
            "the phase (a getter, a conversion hook, a comparator, a replacer, a reviver, or "
            "a function the validator cannot see called): the runtime refuses it"
        ),
        "ctx-inside": (
            "`{what}` runs implicitly and makes a ctx call (`{call}`); the runtime refuses a "
            "ctx call from code JavaScript runs implicitly"
        ),
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
        "unapproved": (
            "Make the call in the handler, in a helper it calls, or in a callback of an array "
            "method (`items.map(...)`) or of `.then`; compute plain data in hooks and "
            "comparators."
        ),
        "ctx-inside": (
            "Make the ctx call in the handler (or a helper it calls) and give the hook the "
            "plain result."
        ),
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


ACCEPTED: Final = frozenset({"accessor", "conversion", "symbol", "define"})
"""Reasons accepted when the construct's code is written in place and calls no ctx."""
ACCEPTED_SYMBOLS: Final = frozenset(
    {"Symbol.toPrimitive", "Symbol.iterator", "Symbol.asyncIterator"}
)


def _inside(node: tree_sitter.Node, calls: list[CapabilityCall]) -> CapabilityCall | None:
    for call in calls:
        if node.start_byte <= call.node.start_byte and call.node.end_byte <= node.end_byte:
            return call
    return None


def _accepted(fact: ImplicitCode) -> bool:
    if fact.reason not in ACCEPTED or not fact.in_place:
        return False
    if fact.reason == "symbol":
        return fact.what in ACCEPTED_SYMBOLS
    return "Symbol." not in fact.what or any(s in fact.what for s in ACCEPTED_SYMBOLS)


def check(analysis: Analysis) -> Iterator[Finding]:
    """Each implicit construct the runtime cannot enforce, each one that makes a ctx call,
    and each ctx call at a site the runtime will not approve."""
    calls = [c for c in analysis.calls if c.node.type == "call_expression"]
    covered: list[tree_sitter.Node] = []
    for fact in analysis.implicit_code:
        if not _accepted(fact):
            covered.append(fact.node)
            yield Finding(fact.reason, fact.node, {"what": fact.what}, fact.handler)
            continue
        inner = _inside(fact.node, calls)
        if inner is not None:
            covered.append(fact.node)
            yield Finding(
                "ctx-inside",
                fact.node,
                {"what": fact.what, "call": f"ctx.{inner.target}"},
                fact.handler,
            )
    seen: set[int] = set()
    for call in calls:
        if approved(call) or call.node.id in seen:
            continue
        if any(n.start_byte <= call.node.start_byte < n.end_byte for n in covered):
            continue
        seen.add(call.node.id)
        yield Finding("unapproved", call.node, {"what": f"ctx.{call.target}"}, call.handler)


rule = Rule(META, check)
