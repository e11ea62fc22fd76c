"""Find forbidden and unavailable globals anywhere in a script.

This scan is syntactic and covers the whole module (top-level code, helpers
and functions no handler calls), because code generation and ``with`` are
refused wherever they appear. A substring search finds the few candidate
words in the text; tree-sitter then tells at each match whether it is code
(and which construct) rather than a string, a comment or a property name.
"""

from __future__ import annotations

import weakref
from dataclasses import dataclass

import tree_sitter

from keep_sdk.contract.globals import SANDBOX_GLOBALS
from keep_sdk.validator.facts import Analysis, GlobalUse, GlobalUseKind
from keep_sdk.validator.fields import Field
from keep_sdk.validator.source import JAVASCRIPT, SourceText

__all__ = [
    "FORBIDDEN_NAMES",
    "HOST_NAMES",
    "UNAVAILABLE_NAMES",
    "Declarations",
    "declarations",
    "declared_in_script",
    "declared_with_var",
    "scan_globals",
]

FORBIDDEN_NAMES = frozenset({"eval", "Function", "require"})
"""Globals that generate or load code; refused wherever they appear."""

HOST_NAMES = frozenset(
    {
        "process",
        "fetch",
        "XMLHttpRequest",
        "WebSocket",
        "setTimeout",
        "setInterval",
        "setImmediate",
        "clearTimeout",
        "clearInterval",
        "window",
        "document",
        "global",
        "Deno",
        "Bun",
        "Buffer",
        "module",
        "exports",
        "__dirname",
        "__filename",
        "importScripts",
        "WeakRef",
        "FinalizationRegistry",
        "URL",
        "URLSearchParams",
        "TextEncoder",
        "TextDecoder",
        "Intl",
        "structuredClone",
        "crypto",
        "AbortController",
        "AbortSignal",
        "self",
        "navigator",
        "localStorage",
        "sessionStorage",
        "SharedArrayBuffer",
        "Atomics",
        "WebAssembly",
        "Blob",
        "File",
        "FileReader",
        "FormData",
        "Headers",
        "Request",
        "Response",
        "ReadableStream",
        "WritableStream",
        "Event",
        "EventTarget",
        "MessageChannel",
        "BroadcastChannel",
        "Worker",
        "location",
        "alert",
        "requestAnimationFrame",
        "clearImmediate",
    }
)
"""Globals of browsers, Node.js and other runtimes that scripts reach for.

The scan looks for these words anywhere in the module (top-level code
included); the handler walk finds every other free name.
"""

UNAVAILABLE_NAMES = HOST_NAMES - SANDBOX_GLOBALS
"""The host globals the sandbox does not define (`SANDBOX_GLOBALS` is measured on it)."""

_WORDS = sorted(
    FORBIDDEN_NAMES
    | UNAVAILABLE_NAMES
    | {"import", "with", "__proto__", "constructor", "setPrototypeOf"}
)
_ENCODED = frozenset(word.encode() for word in _WORDS)
_WORD_BYTES = frozenset(b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_$")


def _occurrences(data: bytes, word_list: list[bytes]) -> list[tuple[int, int, str]]:
    """(start, end, word) for every candidate word standing alone in `data`, in order.

    Splitting the text into runs of word characters finds which candidates
    occur at all (usually none) in one pass; only those are then located.
    """
    present = _ENCODED.intersection(word_list)
    found: list[tuple[int, int, str]] = []
    size = len(data)
    for word in present:
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


_DECLARING_PARENTS = frozenset(
    {
        "formal_parameters",
        "array_pattern",
        "import_clause",
        "import_specifier",
        "namespace_import",
        "rest_pattern",
    }
)
_NAMED_DECLARATIONS = frozenset(
    {
        "variable_declarator",
        "function_declaration",
        "generator_function_declaration",
        "class_declaration",
        "function_expression",
        "class",
    }
)


def _is_declaration(node: tree_sitter.Node) -> bool:
    parent = node.parent
    if parent is None:
        return False
    kind = parent.type
    if kind in _DECLARING_PARENTS:
        return True
    if kind in _NAMED_DECLARATIONS:
        name = parent.child_by_field_id(Field.NAME)
        return name is not None and name.id == node.id
    if kind == "arrow_function":
        parameter = parent.child_by_field_id(Field.PARAMETER)
        return parameter is not None and parameter.id == node.id
    if kind == "catch_clause":
        body = parent.child_by_field_id(Field.BODY)
        return body is None or body.id != node.id
    if kind == "for_in_statement":
        left = parent.child_by_field_id(Field.LEFT)
        return left is not None and left.id == node.id
    if kind in ("assignment_pattern", "object_assignment_pattern"):
        left = parent.child_by_field_id(Field.LEFT)
        return left is not None and left.id == node.id
    if kind == "pair_pattern":
        value = parent.child_by_field_id(Field.VALUE)
        return value is not None and value.id == node.id
    return False


_GLOBAL_OBJECTS = frozenset({"globalThis", "self", "window", "global", "this"})
_FUNCTION_LITERALS = frozenset(
    {"function_expression", "function", "arrow_function", "generator_function", "class"}
)
_PROTOTYPE_GETTERS = frozenset({"Object.getPrototypeOf", "Reflect.getPrototypeOf"})


def _is_function_object(analysis: Analysis, obj: tree_sitter.Node) -> bool:
    """True for a function literal or ``Object.getPrototypeOf(...)``.

    Their ``constructor`` is ``Function``, ``AsyncFunction`` or
    ``GeneratorFunction``, which compile code.
    """
    while obj.type == "parenthesized_expression" and obj.named_child_count:
        obj = obj.named_children[0]
    if obj.type in _FUNCTION_LITERALS:
        return True
    if obj.type == "call_expression":
        callee = obj.child_by_field_id(Field.FUNCTION)
        return callee is not None and analysis.text(callee) in _PROTOTYPE_GETTERS
    return False


def _typeof_operand(node: tree_sitter.Node) -> bool:
    """True for the operand of ``typeof`` (which never throws for a missing global)."""
    parent = node.parent
    if parent is None or parent.type != "unary_expression":
        return False
    operator = parent.child_by_field_id(Field.OPERATOR)
    return operator is not None and operator.type == "typeof"


def _property_of(node: tree_sitter.Node) -> tree_sitter.Node | None:
    """The member expression whose property `node` is."""
    parent = node.parent
    if parent is not None and parent.type == "member_expression":
        prop = parent.child_by_field_id(Field.PROPERTY)
        if prop is not None and prop.id == node.id:
            return parent
    return None


def _classify(analysis: Analysis, node: tree_sitter.Node, word: str) -> GlobalUse | None:
    kind = node.type
    parent = node.parent
    if kind == "identifier":
        if word in FORBIDDEN_NAMES:
            return GlobalUse(node, word, GlobalUseKind.FORBIDDEN)
        if word in UNAVAILABLE_NAMES and not _typeof_operand(node):
            return GlobalUse(node, word, GlobalUseKind.UNAVAILABLE)
        return None
    if kind == "import" and parent is not None:
        if parent.type == "import" and parent.parent is not None:
            parent = parent.parent
        if parent.type == "call_expression":
            return GlobalUse(parent, "import()", GlobalUseKind.FORBIDDEN)
        if parent.type == "import_statement":
            return GlobalUse(parent, "import", GlobalUseKind.FORBIDDEN)
        return None
    if kind == "with" and parent is not None and parent.type == "with_statement":
        return GlobalUse(parent, "with", GlobalUseKind.FORBIDDEN)
    if word == "__proto__":
        if (
            kind == "property_identifier"
            and parent is not None
            and parent.type
            in (
                "member_expression",
                "pair",
            )
        ):
            return GlobalUse(node, word, GlobalUseKind.FORBIDDEN)
        if kind == "string_fragment":
            holder = parent.parent if parent is not None else None
            if holder is not None and holder.type in ("subscript_expression", "pair"):
                return GlobalUse(node, word, GlobalUseKind.FORBIDDEN)
        return None
    if kind == "string_fragment" and word in FORBIDDEN_NAMES:
        holder = parent.parent if parent is not None else None
        if holder is not None and holder.type == "subscript_expression":
            obj = holder.child_by_field_id(Field.OBJECT)
            if obj is not None and analysis.text(obj) in _GLOBAL_OBJECTS:
                return GlobalUse(holder, f"globalThis.{word}", GlobalUseKind.FORBIDDEN)
        return None
    if kind != "property_identifier":
        return None
    member = _property_of(node)
    if member is None:
        return None
    obj = member.child_by_field_id(Field.OBJECT)
    if word in FORBIDDEN_NAMES and obj is not None and analysis.text(obj) in _GLOBAL_OBJECTS:
        return GlobalUse(member, f"globalThis.{word}", GlobalUseKind.FORBIDDEN)
    if word == "constructor" and obj is not None and obj.type == "member_expression":
        inner = obj.child_by_field_id(Field.PROPERTY)
        if inner is not None and analysis.text(inner) == "constructor":
            return GlobalUse(member, "constructor.constructor", GlobalUseKind.FORBIDDEN)
    if word == "constructor" and obj is not None and _is_function_object(analysis, obj):
        return GlobalUse(member, "function.constructor", GlobalUseKind.FORBIDDEN)
    if word == "setPrototypeOf" and obj is not None and analysis.text(obj) in ("Object", "Reflect"):
        return GlobalUse(member, word, GlobalUseKind.FORBIDDEN)
    return None


_DECLARATION_QUERY = tree_sitter.Query(
    JAVASCRIPT,
    """
    (formal_parameters (identifier) @name)
    (array_pattern (identifier) @name)
    (import_clause (identifier) @name)
    (import_specifier (identifier) @name)
    (namespace_import (identifier) @name)
    (rest_pattern (identifier) @name)
    (variable_declarator name: (identifier) @name)
    (function_declaration name: (identifier) @name)
    (generator_function_declaration name: (identifier) @name)
    (class_declaration name: (identifier) @name)
    (function_expression name: (identifier) @name)
    (class name: (identifier) @name)
    (arrow_function parameter: (identifier) @name)
    (catch_clause parameter: (identifier) @name)
    (for_in_statement left: (identifier) @name)
    (assignment_pattern left: (identifier) @name)
    (pair_pattern value: (identifier) @name)
    (shorthand_property_identifier_pattern) @name
    (variable_declaration (variable_declarator name: (identifier) @var))
    """,
)


@dataclass(frozen=True)
class Declarations:
    """The names a script declares anywhere (any scope), found in one pass over its tree."""

    names: frozenset[str]
    """Every name a declaration, parameter, pattern or import binds."""
    var_names: frozenset[str]
    """The names a ``var`` declares (hoisted: reading one early is no error)."""


_declarations: weakref.WeakKeyDictionary[SourceText, Declarations] = weakref.WeakKeyDictionary()


def declarations(source: SourceText) -> Declarations:
    """The `Declarations` of `source`, computed once per parsed script."""
    found = _declarations.get(source)
    if found is None:
        captures = tree_sitter.QueryCursor(_DECLARATION_QUERY).captures(source.root)
        text = source.node_text
        var_names = frozenset(text(node) for node in captures.get("var", ()))
        names = frozenset(text(node) for node in captures.get("name", ())) | var_names
        found = _declarations[source] = Declarations(names, var_names)
    return found


def declared_in_script(analysis: Analysis, name: str) -> bool:
    """True when `name` is declared somewhere in the script (in any scope)."""
    return name in declarations(analysis.source).names


def declared_with_var(analysis: Analysis, name: str) -> bool:
    """True when a ``var`` declares `name` somewhere (hoisted: reading it early is no error)."""
    return name in declarations(analysis.source).var_names


def scan_globals(analysis: Analysis) -> None:
    """Append a `GlobalUse` for each forbidden or unavailable global in the script."""
    data = analysis.source.data
    root = analysis.source.root
    found: list[GlobalUse] = []
    declared: set[str] = set()
    for start, end, word in _occurrences(data, analysis.source.word_list):
        node = root.descendant_for_byte_range(start, end)
        if node is None or node.start_byte != start or node.end_byte != end:
            continue
        if node.type == "shorthand_property_identifier_pattern" or (
            node.type == "identifier" and _is_declaration(node)
        ):
            declared.add(word)
            continue
        use = _classify(analysis, node, word)
        if use is not None:
            found.append(use)
    for use in found:
        if use.node.type == "identifier" and use.name in declared:
            continue
        analysis.globals.append(
            GlobalUse(use.node, use.name, use.kind, analysis.handler_at(use.node))
        )
