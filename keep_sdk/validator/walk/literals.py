"""Object and array literals, and the text check that skips expressions which can find nothing.

Contract: `is_plain_text` is True only when evaluating the expression could
record no fact, yield no tracked value and change no flow state (decided
conservatively from its source text); literals and ``if`` conditions for which
it holds are not walked, but the names they read are still looked up, so an
undeclared one is reported (`undefined-name` or an unavailable global).
Capabilities stored in a literal are recorded as escaping; in `prepare`, an
object with ``topic`` and ``ids`` keys is recorded as a reservation `TopicUse`.
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
from keep_sdk.validator.walk._dispatch import EXPRESSIONS
from keep_sdk.validator.walk._state import WalkState
from keep_sdk.validator.walk.expressions import NEVER_FREE
from keep_sdk.validator.walk.flow import Flow

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
_READ_TYPES = frozenset({"identifier", "shorthand_property_identifier"})
"""The node types of names an expression reads (keys, members and strings are other types)."""
_WORD_BYTES = frozenset(b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_$")
_PARAMETER_NAMES = frozenset({b"ctx", b"state", b"prepared", b"mutationResult"})
"""Handler parameter names: unbound in an expression, they are another phase's parameter."""


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


class Literals(WalkState):
    """Literal handlers and the plain-text check."""

    def is_plain_data(self, node: Node, scope: Scope) -> bool:
        """True when evaluating the literal `node` can find nothing and yields no value.

        The names such a literal reads are still checked (`undeclared_reads`).
        """
        unbound = self._plain_unbound(node.start_byte, node.end_byte, scope)
        if unbound is None:
            return False
        if unbound and self.recording:
            self.undeclared_reads(node, unbound, scope)
        return True

    def undeclared_reads(self, node: Node, unbound: list[bytes], scope: Scope) -> None:
        """Record each name read in `node` that neither a scope nor the sandbox declares.

        `unbound` are the literal's words no scope binds. A word that can only be a
        key (followed by ``:`` in a literal without ``?``) or a member name (after
        ``.``) reads nothing; when only such words are left, the literal is not
        searched.
        """
        text = self.data[node.start_byte : node.end_byte]
        if (b'"' in text or b"'" in text) and b"`" not in text:
            text = _STRINGS.sub(_blank, text)
        if not _reads_any(text, frozenset(unbound)):
            return
        for read in _reads(node):
            if _typeof_operand(read):
                continue
            name = self.text(read)
            if (
                name not in SANDBOX_GLOBALS
                and name not in NEVER_FREE
                and scope.lookup(name) is None
            ):
                self.free_name(read, name)

    def is_plain_text(self, start: int, end: int, scope: Scope) -> bool:
        """True when evaluating the expression at `start:end` finds nothing and changes nothing.

        Decided from the text, conservatively: no call, `new`, function,
        assignment or update can be in it (no ``(``, no ``=`` outside a
        comparison, no ``++``, ``--``),
        no reservation key, and none of its words names a binding that holds
        ctx (or a connector or operation) or module-level state. With a
        template literal (which may be a tagged call) no word may name a
        function or a global whose calls are reported either; and no word is
        a handler parameter name (``state``, ``prepared``...) that no binding
        in scope declares, so reading another phase's parameter is walked and
        reported. Words that are keys or string contents only make the answer
        False more often.
        """
        return self._plain_unbound(start, end, scope) is not None

    def _plain_unbound(self, start: int, end: int, scope: Scope) -> list[bytes] | None:
        """None unless `is_plain_text`; else the words no scope binds that may name a
        missing global (not a sandbox global or contextual keyword)."""
        text = self.data[start:end]
        if not text.isascii():
            return None
        for blocker in _NOT_PLAIN:
            if blocker in text:
                return None
        if may_assign(text):
            return None
        template = b"`" in text
        unbound: list[bytes] = []
        for word in set(words(text)):
            if word in _EFFECT_WORDS:
                return None
            name = word.decode()
            binding = scope.lookup(name)
            if binding is None:
                if template and name in self.tag_roots:
                    return None
                if word in _PARAMETER_NAMES:
                    return None
                if word not in _KNOWN_NAMES and not word[:1].isdigit():
                    unbound.append(word)
                continue
            value = binding.value
            if is_capability(value) or (template and isinstance(value, FunctionValue)):
                return None
            if binding.module and self.is_state_binding(binding):
                return None
        return unbound

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


_STRINGS = re.compile(rb"\"(?:[^\"\\\n]|\\.)*\"|'(?:[^'\\\n]|\\.)*'")
"""Quoted string literals (their words are never names read)."""


def _blank(match: re.Match[bytes]) -> bytes:
    return b" " * (match.end() - match.start())


_KEYWORDS = frozenset(
    {"null", "true", "false", "this", "typeof", "void", "in", "instanceof", "await", "super"}
)
_KNOWN_NAMES = frozenset(name.encode() for name in SANDBOX_GLOBALS | NEVER_FREE | _KEYWORDS)
_SPACE = frozenset(b" \t\r\n")


_WORD = re.compile(rb"[A-Za-z0-9_$]+")


def _reads_any(text: bytes, names: frozenset[bytes]) -> bool:
    """True when some occurrence of one of `names` in `text` may be a name that is read.

    One pass over the words of `text`: an occurrence after ``.`` is a member
    name, one before ``:`` (in a text without ``?``) a key, ``$`` before ``{``
    a template substitution; any other occurrence may be a read.
    """
    keys_possible = 63 not in text
    size = len(text)
    for match in _WORD.finditer(text):
        word = match.group()
        if word not in names:
            continue
        back = match.start() - 1
        while back >= 0 and text[back] in _SPACE:
            back -= 1
        ahead = match.end()
        while ahead < size and text[ahead] in _SPACE:
            ahead += 1
        before = text[back] if back >= 0 else 0
        after = text[ahead] if ahead < size else 0
        member = before == 46
        key = keys_possible and after == 58
        template_start = word == b"$" and after == 123
        if not (member or key or template_start):
            return True
    return False


def _reads(node: Node) -> list[Node]:
    """The name nodes `node` reads, in source order (a literal has no nested scopes)."""
    found: list[Node] = []
    stack = [node]
    while stack:
        current = stack.pop()
        if current.type in _READ_TYPES:
            found.append(current)
        elif current.named_child_count:
            stack.extend(reversed(current.named_children))
    return found


def _typeof_operand(node: Node) -> bool:
    """True for the operand of ``typeof`` (which never throws for an undeclared name)."""
    parent = node.parent
    if parent is None or parent.type != "unary_expression":
        return False
    operator = parent.child_by_field_id(Field.OPERATOR)
    return operator is not None and operator.type == "typeof"


EXPRESSIONS.update({"object": Literals.object_literal, "array": Literals.array_literal})
