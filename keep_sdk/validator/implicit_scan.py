"""Find constructs that make JavaScript run script code implicitly, anywhere in a script.

An accessor runs when a property is read or written, ``toJSON`` when a value is
serialized (every connector argument and every handler result is), ``valueOf``
and ``toString`` when a value is converted, ``then`` when it is awaited, a
``using`` disposer when its block ends, a ``Proxy`` trap on any access. None of
these is a call the handler walk can see, so each is recorded as an
`ImplicitCode` fact wherever it appears (module level, helpers, handlers).

Like the globals scan, a substring search over the script's words finds the few
candidates (usually none); tree-sitter then tells whether each is code of the
construct in question rather than a string, a comment or an ordinary property.
"""

from __future__ import annotations

import re

import tree_sitter

from keep_sdk.contract.globals import SANDBOX_GLOBALS
from keep_sdk.validator.facts import Analysis, ImplicitCode, ImplicitReason
from keep_sdk.validator.fields import Field
from keep_sdk.validator.globals_scan import declared_in_script

__all__ = ["CONVERSION_METHODS", "WELL_KNOWN_SYMBOLS", "scan_implicit_code"]

Node = tree_sitter.Node

CONVERSION_METHODS = frozenset({"toJSON", "valueOf", "toString", "then"})
"""Property names JavaScript calls without a call in the source: serialization,
conversion to a primitive, and ``await`` of a thenable."""

WELL_KNOWN_SYMBOLS = frozenset(
    {
        "toPrimitive",
        "iterator",
        "asyncIterator",
        "hasInstance",
        "species",
        "dispose",
        "asyncDispose",
        "match",
        "matchAll",
        "replace",
        "search",
        "split",
    }
)
"""``Symbol.<name>`` hooks whose method JavaScript calls implicitly."""

_DEFINERS = frozenset({"defineProperty", "defineProperties", "create"})
_LEGACY_DEFINERS = frozenset({"__defineGetter__", "__defineSetter__"})
_DISPOSABLES = frozenset({"Proxy", "DisposableStack", "AsyncDisposableStack"})
_DATA_DESCRIPTOR_KEYS = frozenset({"value", "writable", "enumerable", "configurable"})
_PATCHABLE = SANDBOX_GLOBALS - {"globalThis"}
_COPIERS = frozenset(
    {"Object.assign", "Object.setPrototypeOf", "Reflect.set", "Reflect.setPrototypeOf"}
)
_AFTER_GLOBAL = re.compile(
    rb"(?:\s*\.\s*[\w$]+|\s*\[[^\]]*\])+\s*(?:[-+*/%&|^]|\*\*|<<|>>>?|&&|\|\||\?\?)?(=)(?![=>])"
)
"""After a built-in's name: a member chain and an assignment operator (``.map =``, ``[k] +=``)."""
_PATCHABLE_WORDS = frozenset(name.encode() for name in _PATCHABLE)
_PLAIN_VALUES = frozenset(
    {"string", "number", "true", "false", "null", "undefined", "template_string", "array"}
)
_WORDS = frozenset(
    {"get", "set", "using", "Symbol"}
    | CONVERSION_METHODS
    | _DEFINERS
    | _LEGACY_DEFINERS
    | _DISPOSABLES
    | {"prototype"}
)
_WORD_BYTES = frozenset(b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_$")


def scan_implicit_code(analysis: Analysis) -> None:
    """Append an `ImplicitCode` fact for each construct that runs code implicitly."""
    source = analysis.source
    words = set(source.word_list)
    candidates = [word for word in _ENCODED if word in words]
    globals_named = list(_PATCHABLE_WORDS.intersection(words))
    data = source.data
    root = source.root
    found: list[tuple[Node, ImplicitReason, str]] = []
    for start, end, word in _occurrences(data, candidates):
        node = root.descendant_for_byte_range(start, end)
        if node is None or node.start_byte != start or node.end_byte != end:
            continue
        hit = _classify(analysis, node, word)
        if hit is not None:
            found.append(hit)
    for _, end, _ in _occurrences(data, globals_named):
        match = _AFTER_GLOBAL.match(data, end)
        if match is None:
            continue
        at = match.start(1)
        node = root.descendant_for_byte_range(at, at + 1)
        hit = _patched(analysis, node) if node is not None else None
        if hit is not None:
            found.append(hit)
    seen: set[int] = set()
    for place, reason, what in sorted(found, key=_order):
        if place.id in seen:
            continue
        seen.add(place.id)
        analysis.implicit_code.append(
            ImplicitCode(
                place, reason, what, analysis.handler_at(place), _in_place(analysis, place, reason)
            )
        )


_LITERAL_FUNCTIONS = frozenset({"arrow_function", "function_expression", "function"})
_DEFINERS_IN_PLACE = frozenset(
    {"Object.defineProperty", "Object.defineProperties", "Object.create"}
)


def _in_place(analysis: Analysis, place: Node, reason: ImplicitReason) -> bool:
    """Whether all the code `place` makes JavaScript run is written inside it."""
    if reason == "accessor":
        return True
    if reason == "define":
        return _descriptors_in_place(analysis, place)
    if reason not in ("conversion", "symbol"):
        return False
    if place.type == "method_definition":
        return True
    if place.type in ("field_definition", "pair"):
        value = _unwrap(place.child_by_field_id(Field.VALUE))
        return value is not None and value.type in _LITERAL_FUNCTIONS
    parent = place.parent
    if parent is not None and parent.type == "assignment_expression":
        value = _unwrap(parent.child_by_field_id(Field.RIGHT))
        return value is not None and value.type in _LITERAL_FUNCTIONS
    return False


def _descriptors_in_place(analysis: Analysis, call: Node) -> bool:
    """``Object.defineProperty(o, "k", { get() {...} })`` and the like: literal keys, literal
    descriptors, and every ``get``/``set`` written there."""
    callee = call.child_by_field_id(Field.FUNCTION)
    arguments = call.child_by_field_id(Field.ARGUMENTS)
    if callee is None or arguments is None or analysis.text(callee) not in _DEFINERS_IN_PLACE:
        return False
    values = [child for child in arguments.named_children if child.type != "comment"]
    if analysis.text(callee) == "Object.defineProperty":
        return (
            len(values) == 3
            and _plain_key(analysis, values[1])
            and _accessor_descriptor(analysis, values[2])
        )
    descriptors = _unwrap(values[1]) if len(values) == 2 else None
    if descriptors is None or descriptors.type != "object":
        return False
    for entry in descriptors.named_children:
        if entry.type == "comment":
            continue
        key = entry.child_by_field_id(Field.KEY) if entry.type == "pair" else None
        value = entry.child_by_field_id(Field.VALUE) if entry.type == "pair" else None
        if key is None or value is None or not _plain_key(analysis, key):
            return False
        if not _accessor_descriptor(analysis, value):
            return False
    return True


def _accessor_descriptor(analysis: Analysis, node: Node) -> bool:
    """A descriptor literal whose keys are data keys or ``get``/``set`` written in place."""
    node = _unwrap(node) or node
    if node.type != "object":
        return False
    for entry in node.named_children:
        if entry.type == "comment":
            continue
        if entry.type == "method_definition":
            method = entry.child_by_field_id(Field.NAME)
            if method is None or analysis.text(method) not in ("get", "set"):
                return False
            continue
        if entry.type != "pair":
            return False
        key = entry.child_by_field_id(Field.KEY)
        if key is None or key.type not in ("property_identifier", "string"):
            return False
        name = analysis.text(key).strip("'\"")
        if name in ("get", "set"):
            value = _unwrap(entry.child_by_field_id(Field.VALUE))
            if value is None or value.type not in _LITERAL_FUNCTIONS:
                return False
        elif name not in _DATA_DESCRIPTOR_KEYS:
            return False
    return True


def _order(hit: tuple[Node, ImplicitReason, str]) -> tuple[int, bool]:
    """Source order; of two findings on one node, the replaced built-in is the one reported."""
    return hit[0].start_byte, hit[1] != "patched"


_ENCODED = tuple(sorted(word.encode() for word in _WORDS))


def _occurrences(data: bytes, candidates: list[bytes]) -> list[tuple[int, int, str]]:
    found: list[tuple[int, int, str]] = []
    size = len(data)
    for word in candidates:
        at = data.find(word)
        while at != -1:
            end = at + len(word)
            before = data[at - 1] if at else 32
            after = data[end] if end < size else 32
            if before not in _WORD_BYTES and after not in _WORD_BYTES:
                found.append((at, end, word.decode()))
            at = data.find(word, end)
    found.sort()
    return found


def _unwrap(node: Node | None) -> Node | None:
    while node is not None and node.type == "parenthesized_expression" and node.named_child_count:
        node = node.named_children[0]
    return node


def _is_child(parent: Node | None, field: int, node: Node) -> bool:
    if parent is None:
        return False
    child = parent.child_by_field_id(field)
    return child is not None and child.id == node.id


def _assigned(member: Node) -> bool:
    """True when `member` is the target of an assignment (``=``, ``+=``, ...)."""
    parent = member.parent
    if parent is None or parent.type not in (
        "assignment_expression",
        "augmented_assignment_expression",
    ):
        return False
    return _is_child(parent, Field.LEFT, member)


def _classify(analysis: Analysis, node: Node, word: str) -> tuple[Node, ImplicitReason, str] | None:
    kind = node.type
    parent = node.parent
    if parent is None:
        return None
    if kind in ("get", "set") and parent.type == "method_definition":
        name = parent.child_by_field_id(Field.NAME)
        label = analysis.text(name) if name is not None else "?"
        return parent, "accessor", f"{kind} {label}"
    if kind == "using" and parent.type == "using_declaration":
        return parent, "using", analysis.text(parent).split("=", 1)[0].strip()
    if word in CONVERSION_METHODS:
        return _conversion(analysis, node, word)
    if word == "Symbol" and kind == "identifier":
        return _symbol_hook(analysis, node)
    if word in _DEFINERS or word in _LEGACY_DEFINERS:
        return _definer(analysis, node, word)
    if word in _DISPOSABLES and kind == "identifier":
        if parent.type == "member_expression" and not _is_child(parent, Field.OBJECT, node):
            return None
        if declared_in_script(analysis, word):
            return None
        return node, "proxy" if word == "Proxy" else "using", word
    if word == "prototype":
        return _prototype_argument(analysis, node)
    return None


def _conversion(
    analysis: Analysis, node: Node, word: str
) -> tuple[Node, ImplicitReason, str] | None:
    parent = node.parent
    if parent is None:
        return None
    if node.type == "string_fragment":
        string = parent
        holder = string.parent
        if holder is None:
            return None
        if holder.type == "computed_property_name":
            return _defined_at(analysis, holder, word)
        if holder.type == "pair" and _is_child(holder, Field.KEY, string):
            return _pair(analysis, holder, word)
        if holder.type == "subscript_expression" and _assigned(holder):
            return holder, "conversion", word
        return None
    if node.type != "property_identifier":
        return None
    if parent.type in ("method_definition", "field_definition"):
        return parent, "conversion", word
    if parent.type == "pair":
        return _pair(analysis, parent, word)
    if parent.type == "member_expression" and _assigned(parent):
        return parent, "conversion", word
    return None


def _defined_at(
    analysis: Analysis, computed: Node, word: str
) -> tuple[Node, ImplicitReason, str] | None:
    holder = computed.parent
    if holder is None:
        return None
    if holder.type in ("method_definition", "field_definition"):
        return holder, "conversion", word
    if holder.type == "pair":
        return _pair(analysis, holder, word)
    return None


def _pair(analysis: Analysis, pair: Node, word: str) -> tuple[Node, ImplicitReason, str] | None:
    """A ``key: value`` pair defines an implicit hook unless its value is plain data."""
    value = _unwrap(pair.child_by_field_id(Field.VALUE))
    if value is None or value.type in _PLAIN_VALUES:
        return None
    if value.type == "object" and word != "then":
        return None
    return pair, "conversion", word


def _symbol_hook(analysis: Analysis, node: Node) -> tuple[Node, ImplicitReason, str] | None:
    member = node.parent
    if member is None or member.type != "member_expression":
        return None
    if not _is_child(member, Field.OBJECT, node):
        return None
    prop = member.child_by_field_id(Field.PROPERTY)
    if prop is None or analysis.text(prop) not in WELL_KNOWN_SYMBOLS:
        return None
    if declared_in_script(analysis, "Symbol"):
        return None
    what = f"Symbol.{analysis.text(prop)}"
    holder = member.parent
    if holder is None:
        return None
    if holder.type == "computed_property_name":
        defined = holder.parent
        if defined is not None and defined.type in (
            "method_definition",
            "field_definition",
            "pair",
        ):
            return defined, "symbol", what
        return None
    if holder.type == "subscript_expression" and _is_child(holder, Field.INDEX, member):
        if _assigned(holder):
            return holder, "symbol", what
        return None
    if holder.type == "arguments":
        return holder.parent or holder, "symbol", what
    return None


def _definer(analysis: Analysis, node: Node, word: str) -> tuple[Node, ImplicitReason, str] | None:
    member = node.parent
    if node.type != "property_identifier" or member is None or member.type != "member_expression":
        return None
    call = member.parent
    if (
        call is None
        or call.type != "call_expression"
        or not _is_child(call, Field.FUNCTION, member)
    ):
        return None
    target = analysis.text(member)
    if word in _LEGACY_DEFINERS:
        return call, "define", target
    receiver = member.child_by_field_id(Field.OBJECT)
    if receiver is None or analysis.text(receiver) not in ("Object", "Reflect"):
        return None
    arguments = call.child_by_field_id(Field.ARGUMENTS)
    values = (
        [child for child in arguments.named_children if child.type != "comment"]
        if arguments
        else []
    )
    if word == "defineProperty":
        if (
            len(values) < 3
            or not _plain_key(analysis, values[1])
            or not _data_descriptor(values[2])
        ):
            return call, "define", target
        return None
    descriptors = values[1] if word == "create" and len(values) >= 2 else None
    if word == "defineProperties" and len(values) >= 2:
        descriptors = values[1]
    if word == "defineProperties" and descriptors is None:
        return call, "define", target
    if descriptors is None:
        return None
    descriptors = _unwrap(descriptors)
    if descriptors is None or descriptors.type != "object":
        return call, "define", target
    for entry in descriptors.named_children:
        if entry.type == "comment":
            continue
        key = entry.child_by_field_id(Field.KEY) if entry.type == "pair" else None
        value = entry.child_by_field_id(Field.VALUE) if entry.type == "pair" else None
        if key is None or value is None or not _plain_key(analysis, key):
            return call, "define", target
        if not _data_descriptor(value):
            return call, "define", target
    return None


def _plain_key(analysis: Analysis, key: Node) -> bool:
    """True for a literal property key that JavaScript never calls implicitly."""
    key = _unwrap(key) or key
    if key.type == "property_identifier":
        return analysis.text(key) not in CONVERSION_METHODS
    if key.type == "string":
        return analysis.text(key)[1:-1] not in CONVERSION_METHODS
    return key.type == "number"


def _data_descriptor(node: Node) -> bool:
    """True for an object literal with only data-descriptor keys (no ``get``/``set``)."""
    node = _unwrap(node) or node
    if node.type != "object":
        return False
    for entry in node.named_children:
        if entry.type == "comment":
            continue
        if entry.type != "pair":
            return False
        key = entry.child_by_field_id(Field.KEY)
        if key is None or key.type not in ("property_identifier", "string"):
            return False
        name = key.text.decode("utf-8", "replace").strip("'\"") if key.text else ""
        if name not in _DATA_DESCRIPTOR_KEYS:
            return False
    return True


def _patched(analysis: Analysis, operator: Node) -> tuple[Node, ImplicitReason, str] | None:
    """``Array.prototype.map = ...`` or ``JSON.stringify = ...``: an assignment into a built-in."""
    assignment = operator.parent
    if assignment is None or assignment.type not in (
        "assignment_expression",
        "augmented_assignment_expression",
    ):
        return None
    target = assignment.child_by_field_id(Field.LEFT)
    base = target
    while base is not None and base.type in ("member_expression", "subscript_expression"):
        base = base.child_by_field_id(Field.OBJECT)
    if target is None or base is None or target.id == base.id or base.type != "identifier":
        return None
    name = analysis.text(base)
    if name not in _PATCHABLE or declared_in_script(analysis, name):
        return None
    return target, "patched", analysis.text(target)


def _prototype_argument(analysis: Analysis, node: Node) -> tuple[Node, ImplicitReason, str] | None:
    """``Object.assign(Array.prototype, ...)``: a built-in's prototype handed to a copier."""
    member = node.parent
    if node.type != "property_identifier" or member is None or member.type != "member_expression":
        return None
    base = member.child_by_field_id(Field.OBJECT)
    arguments = member.parent
    if base is None or base.type != "identifier" or arguments is None:
        return None
    if arguments.type != "arguments" or arguments.parent is None:
        return None
    callee = arguments.parent.child_by_field_id(Field.FUNCTION)
    if callee is None or analysis.text(callee) not in _COPIERS:
        return None
    name = analysis.text(base)
    if name not in _PATCHABLE or declared_in_script(analysis, name):
        return None
    return arguments.parent, "patched", analysis.text(member)
