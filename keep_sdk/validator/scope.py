"""Bindings, scopes and the abstract values the analysis tracks through them."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import tree_sitter

from keep_sdk.validator.fields import Field

if TYPE_CHECKING:
    from keep_sdk.validator.facts import CapabilityCall

__all__ = [
    "CTX",
    "Binding",
    "CallResult",
    "ClosureObject",
    "ConnectorValue",
    "CtxMethodValue",
    "CtxValue",
    "FunctionValue",
    "GlobalRef",
    "ModuleState",
    "OperationValue",
    "Scope",
    "StringValue",
    "Value",
    "constant_string",
    "is_capability",
    "module_scope",
    "string_literal",
    "template_text",
]

Node = tree_sitter.Node

CTX_METHODS = frozenset({"publish", "peek", "getByIds"})
FUNCTION_TYPES = frozenset(
    {"arrow_function", "function_expression", "function", "generator_function"}
)


class Value:
    """Base of what an expression may evaluate to, as far as the analysis cares."""

    __slots__ = ()


@dataclass(frozen=True, slots=True)
class CtxValue(Value):
    """The ``ctx`` argument of the handler being analysed."""


CTX = CtxValue()


@dataclass(frozen=True, slots=True)
class ConnectorValue(Value):
    """``ctx.<name>``."""

    name: str


@dataclass(frozen=True, slots=True)
class OperationValue(Value):
    """``ctx.<connector>.<operation>``, a function."""

    connector: str
    operation: str


@dataclass(frozen=True, slots=True)
class CtxMethodValue(Value):
    """``ctx.publish``, ``ctx.peek`` or ``ctx.getByIds``."""

    name: str


@dataclass(frozen=True, slots=True, eq=False)
class FunctionValue(Value):
    """A function the analysis can follow: its node and the scope it closes over."""

    node: Node
    scope: Scope
    name: str | None = None
    this: Value | None = None
    """What ``this`` is in its body when the analysis knows (a method of a module-level
    instance: that instance's `ModuleState`)."""


@dataclass(frozen=True, slots=True, eq=False)
class ClosureObject(Value):
    """An object of functions a module-level IIFE returns (``{ next: () => ++n }``).

    Its functions close over the IIFE's variables, which live as long as the module;
    its other members are the module-level state of the binding `holder`.
    """

    holder: str
    functions: dict[str, FunctionValue]


@dataclass(frozen=True, slots=True, eq=False)
class CallResult(Value):
    """What a call through ctx returns (a promise, or its value once awaited)."""

    call: CapabilityCall


@dataclass(frozen=True, slots=True)
class StringValue(Value):
    """A string constant."""

    text: str


@dataclass(frozen=True, slots=True)
class GlobalRef(Value):
    """An undeclared (global) name or a property path on one: ``Math.random``."""

    path: str


@dataclass(frozen=True, slots=True)
class ModuleState(Value):
    """The object a module-level binding `name` holds, or a part of it.

    ``LOG``, ``ITEMS[0]``, ``ITEMS.find(...)``, ``CONFIG.limits``, a class's
    static members, and any local alias or parameter holding one of them:
    changing it changes module-level state.
    """

    name: str


_CAPABILITIES = (CtxValue, ConnectorValue, OperationValue, CtxMethodValue)


def is_capability(value: Value | None) -> bool:
    """True for ctx and what is reached from it (connectors, operations, ctx methods)."""
    return value is not None and isinstance(value, _CAPABILITIES)


@dataclass(eq=False, slots=True)
class Binding:
    """A declared name. `value` is what the analysis knows it holds (None: unknown).

    `init` is the initializer node of a declaration, `module` marks top-level
    bindings, `kind` is ``const``/``let``/``var``/``function``/``class``/
    ``param``/``import``/``catch``.
    """

    name: str
    kind: str
    node: Node | None
    value: Value | None = None
    init: Node | None = None
    module: bool = False


@dataclass(eq=False, slots=True)
class Scope:
    """A lexical scope; lookups walk to the parent and end at the module scope."""

    parent: Scope | None = None
    bindings: dict[str, Binding] = field(default_factory=dict)

    def lookup(self, name: str) -> Binding | None:
        """The binding `name` resolves to, or None for a global."""
        scope: Scope | None = self
        while scope is not None:
            found = scope.bindings.get(name)
            if found is not None:
                return found
            scope = scope.parent
        return None

    def declare(self, binding: Binding) -> Binding:
        """Add (or replace) `binding`."""
        self.bindings[binding.name] = binding
        return binding


def string_literal(node: Node | None, data: bytes) -> str | None:
    """The value of a string literal or a template without substitutions, else None."""
    if node is None:
        return None
    kind = node.type
    if kind == "string":
        raw = data[node.start_byte + 1 : node.end_byte - 1].decode("utf-8", "replace")
        return _unescape(raw) if "\\" in raw else raw
    if kind == "template_string":
        for child in node.named_children:
            if child.type != "string_fragment":
                return None
        raw = data[node.start_byte + 1 : node.end_byte - 1].decode("utf-8", "replace")
        return _unescape(raw) if "\\" in raw else raw
    if kind == "parenthesized_expression" and node.named_child_count == 1:
        return string_literal(node.named_children[0], data)
    return None


_MAX_CONSTANT_DEPTH = 64
"""Nesting (``+``, templates, parentheses) `constant_string` follows before giving up."""


def constant_string(node: Node | None, scope: Scope, data: bytes, depth: int = 0) -> str | None:
    """The value of `node` when it is a string constant, else None.

    A constant is a string literal, a template literal whose substitutions are
    constants, ``+`` of two constants, or the name of a ``const`` binding
    (resolved in `scope`) that holds a constant; a template in which a
    substitution is a constant built from other constants
    (``const SUBMITTED = `${NS}.submitted```) is one. Never recurses deeper than
    64 levels of nesting.
    """
    if node is None or depth > _MAX_CONSTANT_DEPTH:
        return None
    kind = node.type
    if kind == "string":
        return string_literal(node, data)
    if kind == "template_string":
        return template_text(
            node, data, lambda inner: constant_string(inner, scope, data, depth + 1)
        )
    if kind == "identifier":
        binding = scope.lookup(data[node.start_byte : node.end_byte].decode("utf-8", "replace"))
        if (
            binding is not None
            and binding.kind == "const"
            and isinstance(binding.value, StringValue)
        ):
            return binding.value.text
        return None
    if kind == "parenthesized_expression" and node.named_child_count == 1:
        return constant_string(node.named_children[0], scope, data, depth + 1)
    if kind == "binary_expression":
        operator = node.child_by_field_id(Field.OPERATOR)
        if operator is None or operator.type != "+":
            return None
        left = constant_string(node.child_by_field_id(Field.LEFT), scope, data, depth + 1)
        if left is None:
            return None
        right = constant_string(node.child_by_field_id(Field.RIGHT), scope, data, depth + 1)
        return None if right is None else left + right
    return None


def template_text(
    node: Node, data: bytes, substitution: Callable[[Node], str | None]
) -> str | None:
    """The value of the template literal `node`, each substitution's expression valued
    by `substitution` (None when one of them has no string value)."""
    parts: list[str] = []
    for child in node.named_children:
        kind = child.type
        if kind == "string_fragment":
            parts.append(data[child.start_byte : child.end_byte].decode("utf-8", "replace"))
        elif kind == "escape_sequence":
            parts.append(_unescape(data[child.start_byte : child.end_byte].decode("utf-8")))
        elif kind == "template_substitution" and child.named_child_count == 1:
            value = substitution(child.named_children[0])
            if value is None:
                return None
            parts.append(value)
        else:
            return None
    return "".join(parts)


_SIMPLE_ESCAPES = {"n": "\n", "t": "\t", "r": "\r", "b": "\b", "f": "\f", "v": "\v", "0": "\0"}


def _unescape(raw: str) -> str:
    out: list[str] = []
    i = 0
    while i < len(raw):
        char = raw[i]
        if char != "\\" or i + 1 == len(raw):
            out.append(char)
            i += 1
            continue
        nxt = raw[i + 1]
        if nxt == "u" and raw[i + 2 : i + 3] == "{":
            close = raw.find("}", i)
            try:
                out.append(chr(int(raw[i + 3 : close], 16)))
                i = close + 1
                continue
            except ValueError:
                pass
        elif nxt in "ux":
            width = 4 if nxt == "u" else 2
            try:
                out.append(chr(int(raw[i + 2 : i + 2 + width], 16)))
                i += 2 + width
                continue
            except ValueError:
                pass
        out.append(_SIMPLE_ESCAPES.get(nxt, "" if nxt == "\n" else nxt))
        i += 2
    return "".join(out)


def pattern_names(node: Node) -> list[Node]:
    """Identifier nodes a binding pattern declares."""
    kind = node.type
    if kind in ("identifier", "shorthand_property_identifier_pattern"):
        return [node]
    names: list[Node] = []
    if kind == "pair_pattern":
        value = node.child_by_field_id(Field.VALUE)
        return pattern_names(value) if value is not None else []
    if kind in ("assignment_pattern", "object_assignment_pattern"):
        left = node.child_by_field_id(Field.LEFT)
        return pattern_names(left) if left is not None else []
    for child in node.named_children:
        if child.type in ("comment", "property_identifier", "computed_property_name"):
            continue
        names.extend(pattern_names(child))
    return names


def declared_value(init: Node | None, scope: Scope, data: bytes) -> Value | None:
    """What a declaration initializer gives, when it is a constant the analysis tracks."""
    if init is None:
        return None
    if init.type in FUNCTION_TYPES:
        return FunctionValue(init, scope)
    text = constant_string(init, scope, data)
    if text is not None:
        return StringValue(text)
    return None


def declarations(statement: Node) -> tuple[str, list[Node]]:
    """The kind (``const``/``let``/``var``) and declarators of a declaration statement."""
    kind = "var"
    first = statement.child(0)
    if statement.type == "lexical_declaration" and first is not None:
        kind = first.type
    elif statement.type == "using_declaration":
        kind = "const"
    return kind, [c for c in statement.named_children if c.type == "variable_declarator"]


def module_scope(root: Node, data: bytes) -> Scope:
    """The top-level bindings of a module: functions, variables, classes, imports.

    A top-level ``let``/``var`` whose initializer is a function holds that
    function (the walk follows it like a ``const`` helper) when every other
    reference to its name is a call: nothing can then assign it another value.
    """
    scope = Scope()
    for statement in root.named_children:
        declaration = statement
        if statement.type == "export_statement":
            inner = statement.child_by_field_id(Field.DECLARATION)
            if inner is None:
                continue
            declaration = inner
        declare_statement(declaration, scope, data, module=True)
    for binding in scope.bindings.values():
        if (
            binding.kind in ("let", "var")
            and binding.init is not None
            and binding.init.type in FUNCTION_TYPES
            and binding.node is not None
            and _only_called(root, data, binding.node)
        ):
            binding.value = FunctionValue(binding.init, scope, binding.name)
    return scope


_NOT_REFERENCES = frozenset(
    {"property_identifier", "string_fragment", "comment", "regex_pattern", "template_string"}
)
"""Leaves whose text may equal a binding's name without referring to the binding."""


def _only_called(root: Node, data: bytes, name: Node) -> bool:
    """True when every other occurrence of the name `name` declares is the callee of a call.

    Occurrences are found in the text and confirmed on the tree, so strings,
    comments and property names that merely spell the name do not count. A
    script with a ``\\u`` escape anywhere is never trusted: an escaped
    identifier (``re\\u0061d``) names the binding without spelling it.
    """
    if b"\\u" in data:
        return False
    spelled = data[name.start_byte : name.end_byte]
    pattern = re.compile(rb"(?<![\w$])" + re.escape(spelled) + rb"(?![\w$])")
    for found in pattern.finditer(data):
        start, end = found.span()
        if start == name.start_byte:
            continue
        leaf = root.descendant_for_byte_range(start, end)
        if leaf is None or leaf.type in _NOT_REFERENCES:
            continue
        if leaf.type != "identifier" or (leaf.start_byte, leaf.end_byte) != (start, end):
            return False
        parent = leaf.parent
        if parent is None or parent.type != "call_expression":
            return False
        callee = parent.child_by_field_id(Field.FUNCTION)
        if callee is None or callee.id != leaf.id:
            return False
    return True


def declare_statement(statement: Node, scope: Scope, data: bytes, *, module: bool) -> None:
    """Declare what `statement` binds (if it is a declaration) in `scope`."""
    kind = statement.type
    if kind in ("function_declaration", "generator_function_declaration"):
        name = statement.child_by_field_id(Field.NAME)
        if name is not None:
            text = data[name.start_byte : name.end_byte].decode("utf-8", "replace")
            scope.declare(
                Binding(
                    text,
                    "function",
                    name,
                    FunctionValue(statement, scope, text),
                    statement,
                    module,
                )
            )
    elif kind in ("lexical_declaration", "variable_declaration", "using_declaration"):
        decl_kind, declarators = declarations(statement)
        for declarator in declarators:
            target = declarator.child_by_field_id(Field.NAME)
            init = declarator.child_by_field_id(Field.VALUE)
            if target is None:
                continue
            if target.type == "identifier":
                text = data[target.start_byte : target.end_byte].decode("utf-8", "replace")
                value = declared_value(init, scope, data) if decl_kind == "const" else None
                if isinstance(value, FunctionValue):
                    value = FunctionValue(value.node, scope, text)
                scope.declare(Binding(text, decl_kind, target, value, init, module))
            else:
                for name in pattern_names(target):
                    text = data[name.start_byte : name.end_byte].decode("utf-8", "replace")
                    scope.declare(Binding(text, decl_kind, name, None, None, module))
    elif kind == "class_declaration":
        name = statement.child_by_field_id(Field.NAME)
        if name is not None:
            text = data[name.start_byte : name.end_byte].decode("utf-8", "replace")
            scope.declare(Binding(text, "class", name, None, statement, module))
    elif kind == "import_statement":
        for child in _walk_named(statement):
            if child.type == "identifier":
                text = data[child.start_byte : child.end_byte].decode("utf-8", "replace")
                scope.declare(Binding(text, "import", child, None, None, module))


def _walk_named(node: Node) -> list[Node]:
    found: list[Node] = []
    stack = list(node.named_children)
    while stack:
        child = stack.pop()
        found.append(child)
        stack.extend(child.named_children)
    return found
