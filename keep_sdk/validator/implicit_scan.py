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
_PATCHABLE = SANDBOX_GLOBALS - {"globalThis", "console", "Keep"}
_PLAIN_VALUES = frozenset(
    {"string", "number", "true", "false", "null", "undefined", "template_string", "array"}
)
_WORDS = frozenset(
    {"get", "set", "using", "Symbol"}
    | CONVERSION_METHODS
    | _DEFINERS
    | _LEGACY_DEFINERS
    | _DISPOSABLES
)
_WORD_BYTES = frozenset(b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_$")


def scan_implicit_code(analysis: Analysis) -> None:
    """Append an `ImplicitCode` fact for each construct that runs code implicitly."""
    source = analysis.source
    words = set(source.word_list)
    candidates = [word for word in _ENCODED if word in words]
    patched = [word for word in _ENCODED_GLOBALS if word in words]
    if not candidates and not patched:
        return
    data = source.data
    root = source.root
    seen: set[int] = set()
    for start, end, word in _occurrences(data, candidates + patched):
        node = root.descendant_for_byte_range(start, end)
        if node is None or node.start_byte != start or node.end_byte != end:
            continue
        found = _classify(analysis, node, word)
        if found is None or found[0].id in seen:
            continue
        seen.add(found[0].id)
        at, reason, what = found
        analysis.implicit_code.append(ImplicitCode(at, reason, what, analysis.handler_at(at)))


_ENCODED = tuple(sorted(word.encode() for word in _WORDS))
_ENCODED_GLOBALS = tuple(sorted(word.encode() for word in _PATCHABLE if word not in _WORDS))


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
    if kind == "identifier" and word in _PATCHABLE:
        return _patched(analysis, node, word)
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


def _patched(analysis: Analysis, node: Node, word: str) -> tuple[Node, ImplicitReason, str] | None:
    """``Array.prototype.map = ...`` or ``JSON.stringify = ...`` on a sandbox built-in."""
    member = node.parent
    if member is None or member.type not in ("member_expression", "subscript_expression"):
        return None
    if not _is_child(member, Field.OBJECT, node):
        return None
    root_name = word
    top = member
    parent = top.parent
    if (
        parent is not None
        and parent.type in ("member_expression", "subscript_expression")
        and _is_child(parent, Field.OBJECT, top)
        and _property_name(analysis, top) == "prototype"
    ):
        top = parent
    elif _property_name(analysis, top) == "prototype" and _argument_of_assign(top):
        if declared_in_script(analysis, root_name):
            return None
        return (
            top.parent.parent if top.parent and top.parent.parent else top,
            "patched",
            analysis.text(top),
        )
    if not _assigned(top):
        return None
    if declared_in_script(analysis, root_name):
        return None
    return top, "patched", analysis.text(top)


def _property_name(analysis: Analysis, member: Node) -> str | None:
    prop = member.child_by_field_id(
        Field.PROPERTY if member.type == "member_expression" else Field.INDEX
    )
    if prop is None:
        return None
    text = analysis.text(prop)
    return text.strip("'\"") if prop.type in ("property_identifier", "string") else None


def _argument_of_assign(member: Node) -> bool:
    """``Object.assign(Array.prototype, ...)`` and the like: a prototype handed to a copier."""
    arguments = member.parent
    if arguments is None or arguments.type != "arguments":
        return False
    call = arguments.parent
    if call is None or call.type != "call_expression":
        return False
    callee = call.child_by_field_id(Field.FUNCTION)
    return (
        callee is not None
        and callee.type == "member_expression"
        and (callee.text or b"").decode("utf-8", "replace")
        in ("Object.assign", "Object.setPrototypeOf", "Reflect.set")
    )
