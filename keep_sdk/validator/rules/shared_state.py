"""shared-state: handlers reading or writing module-level mutable state.

What it does: flags, inside handlers and the helpers they call, writes to
top-level ``let``/``var`` bindings, changes to objects held by top-level
bindings (``CACHE[k] = v``, ``SEEN.add(id)``, ``LIST.push(x)``, also through
static members of classes, properties of functions, aliases, helper
parameters and elements found with ``.find()`` or an index), reads of
such state that some handler changes, writes to ``globalThis``, and
assignments to undeclared names (implicit globals).

Why is this bad? Every handler phase runs in a fresh sandbox that loads the
script anew: a value written in one run is gone in the next, and never seen by
another handler. Code that counts on it silently misbehaves. Keep state in
the handler's return value, and pass data between handlers through topics.
"""

from __future__ import annotations

from collections.abc import Iterator

from keep_sdk.validator._diagnostics import Severity
from keep_sdk.validator.facts import Analysis
from keep_sdk.validator.rule import Finding, Rule, RuleMeta
from keep_sdk.validator.rules._support import why
from keep_sdk.validator.vocabulary import WalkVocabulary

__all__ = ["MUTATING_METHODS", "OBJECT_WRITERS", "VOCABULARY", "rule"]

MUTATING_METHODS = frozenset(
    {
        "push",
        "pop",
        "shift",
        "unshift",
        "splice",
        "sort",
        "reverse",
        "fill",
        "copyWithin",
        "set",
        "add",
        "delete",
        "clear",
    }
)
"""Methods of arrays, maps and sets that change the object they are called on."""
OBJECT_WRITERS = frozenset(
    {"Object.assign", "Object.defineProperty", "Object.defineProperties", "Reflect.set"}
)
"""Global functions that change the object passed as their first argument."""

VOCABULARY = WalkVocabulary(receiver_writers=MUTATING_METHODS, argument_writers=OBJECT_WRITERS)
"""The walk records these calls on module-level objects as ``mutate`` accesses."""

META = RuleMeta(
    id="shared-state",
    severity=Severity.ERROR,
    description="A handler reads or writes module-level mutable state.",
    rationale=why(__doc__),
    messages={
        "write": "`{name}` is a module-level variable; assigning it from a handler is lost",
        "mutate": (
            "this changes the module-level `{name}`; changes made in a handler are lost when "
            "the run ends"
        ),
        "read": (
            "`{name}` is module-level state that a handler changes; its value here is always "
            "the initial one"
        ),
        "global-write": "writing to `globalThis` from a handler is lost when the run ends",
        "implicit-global": (
            "`{name}` is not declared; assigning it creates an implicit global (a "
            "ReferenceError in a module)"
        ),
    },
    hint=(
        "Each handler phase runs in a fresh sandbox, so `{name}` does not carry over. If it "
        "holds data read from outside (a list from a sheet), read it again where it is used, "
        "in `prepare` or the producer, on every run, and pass it on through `prepared.data`. "
        "Keep in the handler's state only what the workflow decides itself (a cursor, a "
        "count): return it from the producer or from `next`, read it from `state`."
    ),
    hints={
        "global-write": (
            "Do not store values on globalThis; keep them in local variables, in the handler's "
            "returned state, or pass them through `prepared.data`."
        ),
        "implicit-global": (
            "Declare `{name}` with `const` or `let` inside the function that uses it."
        ),
    },
)


def check(analysis: Analysis) -> Iterator[Finding]:
    """Writes always; reads only of bindings some handler writes (else they are constants)."""
    changed = {s.name for s in analysis.shared_state if s.access in ("write", "mutate")}
    writes = [
        (s.node.start_byte, s.node.end_byte)
        for s in analysis.shared_state
        if s.access in ("write", "mutate", "global-write")
    ]
    for access in analysis.shared_state:
        if access.access == "read":
            if access.name not in changed:
                continue
            start, end = access.node.start_byte, access.node.end_byte
            if any(s <= start and end <= e for s, e in writes):
                continue
        yield Finding(access.access, access.node, {"name": access.name}, access.handler)


rule = Rule(META, check, VOCABULARY)
