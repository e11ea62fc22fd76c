"""The ctx call sites each handler phase may make: what the host approves at run time.

A call site is approved for a phase when the walk attributed the call to that phase as
an ordinary call: in the handler's body, in a function the walk followed as called from
it (a helper, a promise continuation of a ctx call), or in a callback passed to one of
the array iteration methods in `ITERATION_HOSTS` or to ``new Promise``. A site in a
function the walk could not attribute (created but never called where it could see: a
getter, a ``toJSON``, a ``then`` method, an object's method passed by name) or in a
callback given to any other callee (a ``JSON.stringify`` replacer, a ``sort`` comparator, a
``JSON.parse`` reviver, an unknown function) is never approved. The position is where
the call expression less the functions written inside it (see
`keep_sdk.contract.workflow.CallSite`): the engine locates a call somewhere in it.
"""

from __future__ import annotations

from typing import Final

import tree_sitter

from keep_sdk.contract.workflow import CallSite, HandlerLocation, WorkflowManifest
from keep_sdk.model import HandlerKind
from keep_sdk.validator.facts import Analysis, CapabilityCall, Handler

__all__ = ["ITERATION_HOSTS", "approved", "call_sites", "holes", "with_call_sites"]

ITERATION_HOSTS: Final = frozenset(
    {
        "",
        "every",
        "filter",
        "find",
        "findIndex",
        "findLast",
        "findLastIndex",
        "flatMap",
        "forEach",
        "from",
        "map",
        "reduce",
        "reduceRight",
        "some",
        "then",
        "catch",
        "finally",
    }
)
"""Callees whose callback argument is run as an ordinary call of the phase (``""`` is
``new Promise(executor)``, whose executor runs at once; ``then``/``catch``/``finally``
are continuations the script asks for). The callback is written in the call or named
there (a function declaration or a ``const`` bound to a function expression)."""


def approved(call: CapabilityCall) -> bool:
    """Whether `call` is an approved site of its handler's phase (see the module doc)."""
    return not call.detached and all(host in ITERATION_HOSTS for host in call.callback_hosts)


_FUNCTIONS: Final = frozenset(
    {
        "arrow_function",
        "function_expression",
        "function",
        "function_declaration",
        "generator_function",
        "generator_function_declaration",
        "method_definition",
        "class",
        "class_declaration",
        "class_body",
    }
)


def _point(point: tree_sitter.Point) -> tuple[int, int]:
    return point.row + 1, point.column + 1


def holes(call: tree_sitter.Node) -> tuple[tuple[int, int, int, int], ...]:
    """The outermost functions and classes written inside `call`, as position ranges."""
    found: list[tuple[int, int, int, int]] = []
    stack = list(call.children)
    while stack:
        node = stack.pop()
        if node.type in _FUNCTIONS:
            found.append((*_point(node.start_point), *_point(node.end_point)))
        else:
            stack.extend(node.children)
    return tuple(sorted(found))


def call_sites(analysis: Analysis, handler: Handler) -> tuple[CallSite, ...]:
    """The approved ctx call sites of `handler`, in source order, each once."""
    found: dict[tuple[str, int, int], CallSite] = {}
    for call in analysis.calls:
        if call.handler is not handler or not approved(call):
            continue
        if call.node.type != "call_expression":
            continue
        operation = call.operation if call.connector is not None else call.method
        if operation is None:
            continue
        line, column = _point(call.node.start_point)
        end_line, end_column = _point(call.node.end_point)
        site = CallSite(
            connector=call.connector,
            operation=operation,
            line=line,
            column=column,
            end_line=end_line,
            end_column=end_column,
            mutation=call.is_mutation,
            holes=holes(call.node),
        )
        found.setdefault((site.name, line, column), site)
    return tuple(sorted(found.values(), key=lambda s: (s.line, s.column, s.name)))


def with_call_sites(analysis: Analysis) -> WorkflowManifest | None:
    """The analysis's manifest with every handler's approved call sites recorded."""
    manifest = analysis.manifest
    if manifest is None:
        return None
    by_key = {(h.kind, h.name, h.phase): h for h in analysis.handlers}

    def located(kind: HandlerKind, name: str, location: HandlerLocation) -> HandlerLocation:
        handler = by_key.get((kind, name, location.phase))
        sites = call_sites(analysis, handler) if handler is not None else ()
        return location.model_copy(update={"call_sites": sites})

    producers = [
        p.model_copy(update={"handler": located(HandlerKind.PRODUCER, p.name, p.handler)})
        for p in manifest.producers
    ]
    consumers = [
        c.model_copy(
            update={
                phase: located(HandlerKind.CONSUMER, c.name, getattr(c, phase))
                for phase in ("prepare", "mutate", "next")
            }
        )
        for c in manifest.consumers
    ]
    return manifest.model_copy(update={"producers": producers, "consumers": consumers})
