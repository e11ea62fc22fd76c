"""Object and array literals, and the text check that skips expressions which can find nothing.

Contract: `is_plain_text` is True only when evaluating the expression could
record no fact, yield no tracked value and change no flow state (decided
conservatively from its source text); literals and ``if`` conditions for which
it holds are not walked. Capabilities stored in a literal are recorded as
escaping; in `prepare`, an object with ``topic`` and ``ids`` keys is recorded as
a reservation `TopicUse`.
"""

from __future__ import annotations

import re

import tree_sitter

from keep_sdk.contract.globals import SANDBOX_GLOBALS
from keep_sdk.model import HandlerPhase
from keep_sdk.validator.facts import TopicUse
from keep_sdk.validator.fields import Field
from keep_sdk.validator.scope import FunctionValue, Scope, StringValue, Value, is_capability
from keep_sdk.validator.source import words
from keep_sdk.validator.walk.dispatch import EXPRESSIONS
from keep_sdk.validator.walk.flow import Flow
from keep_sdk.validator.walk.state import WalkState

__all__ = ["Literals", "may_assign"]

Node = tree_sitter.Node

_CONSTANTS = frozenset(
    {"comment", "string", "number", "true", "false", "null", "undefined", "regex"}
)
"""Leaf expressions whose value only matters where it is a key's or an argument's value."""
_NOT_PLAIN = (b"(", b"++", b"--", b"\\")
_EFFECT_WORDS = frozenset(
    {b"new", b"delete", b"import", b"yield", b"function", b"class", b"topic", b"ids"}
)


_STRINGS = re.compile(rb"\"(?:[^\"\\\n]|\\.)*\"|'(?:[^'\\\n]|\\.)*'")
_READ = re.compile(rb"(?<![\w$.])([A-Za-z_$][\w$]*)(?![\w$])(?!\s*:)")
_READ_ANYWHERE = re.compile(rb"(?<![\w$.])([A-Za-z_$][\w$]*)(?![\w$])")
"""Words not after ``.`` (and, for `_READ`, not before ``:``): where a variable may be read."""
_NOT_NAMES = frozenset(
    b"""true false null undefined typeof instanceof in of void this super await async
    let const var if else return get set static arguments NaN Infinity""".split()
)
"""Words in an expression's text that never name a variable the walk would look up."""


def may_assign(text: bytes) -> bool:
    """True when `text` has an ``=`` that is not part of a comparison (an assignment or ``=>``)."""
    at = text.find(b"=")
    while at != -1:
        before = text[at - 1 : at]
        after = text[at + 1 : at + 2]
        if after == b">":
            return True
        comparison = (
            after == b"="
            or before in (b"=", b"!")
            or (before in (b"<", b">") and text[at - 2 : at - 1] not in (b"<", b">"))
        )
        if not comparison:
            return True
        at = text.find(b"=", at + 1)
    return False


def _may_read(text: bytes, names: list[bytes]) -> bool:
    """True when one of `names` may be read as a variable in the expression `text`.

    An occurrence inside a string literal, after ``.`` (a property) or before
    ``:`` outside a conditional expression (an object key) is not a read.
    """
    if b"`" in text:
        text = _code_only(text)
    elif b"'" in text or b'"' in text:
        text = _STRINGS.sub(b'""', text)
    conditional = b"?" in text.replace(b"?.", b"").replace(b"??", b"")
    pattern = _READ_ANYWHERE if conditional else _READ
    return not set(pattern.findall(text)).isdisjoint(names)


def _code_only(text: bytes) -> bytes:
    """`text` with the contents of string and template literals blanked (substitutions kept)."""
    out = bytearray(text)
    quote = 0
    depths: list[int] = []
    depth = 0
    index = 0
    size = len(text)
    while index < size:
        byte = text[index]
        if quote:
            if byte == 0x5C:
                out[index] = 0x20
                if index + 1 < size:
                    out[index + 1] = 0x20
                index += 2
                continue
            if byte == quote:
                quote = 0
            elif quote == 0x60 and byte == 0x24 and text[index + 1 : index + 2] == b"{":
                depths.append(depth)
                depth = 0
                quote = 0
                index += 2
                continue
            else:
                out[index] = 0x20
        elif byte in (0x22, 0x27, 0x60):
            quote = byte
        elif byte == 0x7B:
            depth += 1
        elif byte == 0x7D:
            if depth == 0 and depths:
                depth = depths.pop()
                quote = 0x60
            else:
                depth -= 1
        index += 1
    return bytes(out)


class Literals(WalkState):
    """Literal handlers and the plain-text check."""

    def is_plain_data(self, node: Node, scope: Scope) -> bool:
        """True when evaluating the literal `node` can find nothing and yields no value."""
        return self.is_plain_text(node.start_byte, node.end_byte, scope)

    def is_plain_text(self, start: int, end: int, scope: Scope) -> bool:
        """True when evaluating the expression at `start:end` finds nothing and changes nothing.

        Decided from the text, conservatively: no call, `new`, function,
        assignment or update can be in it (no ``(``, no ``=`` outside a
        comparison, no ``++``, ``--``),
        no reservation key, and none of its words names a binding that holds
        ctx (or a connector or operation) or module-level state. With a
        template literal (which may be a tagged call) no word may name a
        function or a global whose calls are reported either. Words that are
        keys or string contents only make the answer False more often.
        """
        text = self.data[start:end]
        if not text.isascii():
            return False
        for blocker in _NOT_PLAIN:
            if blocker in text:
                return False
        if may_assign(text):
            return False
        template = b"`" in text
        free: list[bytes] = []
        for word in set(words(text)):
            if word in _EFFECT_WORDS:
                return False
            name = word.decode()
            binding = scope.lookup(name)
            if binding is None:
                if template and name in self.tag_roots:
                    return False
                if name not in SANDBOX_GLOBALS and word not in _NOT_NAMES and word[0] > 0x39:
                    free.append(word)
                continue
            value = binding.value
            if is_capability(value) or (template and isinstance(value, FunctionValue)):
                return False
            if binding.module and self.is_state_binding(binding):
                return False
        return not free or not _may_read(text, free)

    def object_literal(self, node: Node, scope: Scope, state: Flow) -> tuple[Value | None, Flow]:
        if self.is_plain_data(node, scope):
            return None, state
        track = self.handler.phase is HandlerPhase.PREPARE and self.recording
        keys: dict[str, Value | None] = {}
        key_nodes: dict[str, Node] = {}
        for child in node.named_children:
            kind = child.type
            if kind == "pair":
                parts = child.named_children
                key: Node | None
                value_node: Node | None
                if len(parts) == 2:
                    key, value_node = parts[0], parts[1]
                else:
                    key = child.child_by_field_id(Field.KEY)
                    value_node = child.child_by_field_id(Field.VALUE)
                if key is not None and key.type == "computed_property_name":
                    name = self.key_name(key)
                    if name is None:
                        _, state = self.passthrough(key, scope, state)
                elif track and key is not None:
                    name = self.key_name(key)
                else:
                    name = None
                if value_node is None:
                    continue
                if value_node.type in _CONSTANTS and name != "topic":
                    if name is not None:
                        keys[name] = None
                        key_nodes[name] = value_node
                    continue
                value, state = self.expr(value_node, scope, state)
                if is_capability(value) and self.recording:
                    self.dynamic(child, "escapes", self.describe(value))
                if name is not None:
                    keys[name] = value
                    key_nodes[name] = value_node
            elif kind == "shorthand_property_identifier":
                value, state = self.identifier(child, scope, state)
                if is_capability(value) and self.recording:
                    self.dynamic(child, "escapes", self.describe(value))
                keys[self.text(child)] = value
                key_nodes[self.text(child)] = child
            elif kind == "spread_element":
                _, state = self.spread_element(child, scope, state)
            elif kind == "method_definition":
                self.function_literal(child, scope, state)
        if track and "topic" in keys and "ids" in keys:
            topic = keys["topic"]
            self.analysis.topics.append(
                TopicUse(
                    key_nodes["topic"],
                    topic.text if isinstance(topic, StringValue) else None,
                    "reservation",
                    self.handler,
                    self.handler.name,
                )
            )
        return None, state

    def array_literal(self, node: Node, scope: Scope, state: Flow) -> tuple[Value | None, Flow]:
        if self.is_plain_data(node, scope):
            return None, state
        for child in node.named_children:
            if child.type in _CONSTANTS:
                continue
            value, state = self.expr(child, scope, state)
            if is_capability(value) and self.recording:
                self.dynamic(child, "escapes", self.describe(value))
        return None, state


EXPRESSIONS.update({"object": Literals.object_literal, "array": Literals.array_literal})
