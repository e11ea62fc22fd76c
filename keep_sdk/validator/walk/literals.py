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

import tree_sitter

from keep_sdk.contract.globals import SANDBOX_GLOBALS
from keep_sdk.model import HandlerPhase
from keep_sdk.validator.facts import TopicUse
from keep_sdk.validator.fields import Field
from keep_sdk.validator.scope import FunctionValue, Scope, StringValue, Value, is_capability
from keep_sdk.validator.source import JAVASCRIPT, words
from keep_sdk.validator.walk.dispatch import EXPRESSIONS
from keep_sdk.validator.walk.expressions import NEVER_FREE
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
_READS = tree_sitter.Query(JAVASCRIPT, "[(identifier) (shorthand_property_identifier)] @name")
"""The names an expression reads (keys, members and string contents are other node types)."""
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
        if not self.is_plain_text(node.start_byte, node.end_byte, scope):
            return False
        if self.recording:
            self.undeclared_reads(node, scope)
        return True

    def undeclared_reads(self, node: Node, scope: Scope) -> None:
        """Record each name read in `node` that neither a scope nor the sandbox declares."""
        for word in set(words(self.data[node.start_byte : node.end_byte])):
            name = word.decode()
            if (
                name not in SANDBOX_GLOBALS
                and name not in NEVER_FREE
                and scope.lookup(name) is None
            ):
                break
        else:
            return
        reads = tree_sitter.QueryCursor(_READS).captures(node).get("name", [])
        for read in sorted(reads, key=lambda found: found.start_byte):
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
        text = self.data[start:end]
        if not text.isascii():
            return False
        for blocker in _NOT_PLAIN:
            if blocker in text:
                return False
        if may_assign(text):
            return False
        template = b"`" in text
        for word in set(words(text)):
            if word in _EFFECT_WORDS:
                return False
            name = word.decode()
            binding = scope.lookup(name)
            if binding is None:
                if template and name in self.tag_roots:
                    return False
                if word in _PARAMETER_NAMES:
                    return False
                continue
            value = binding.value
            if is_capability(value) or (template and isinstance(value, FunctionValue)):
                return False
            if binding.module and self.is_state_binding(binding):
                return False
        return True

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


def _typeof_operand(node: Node) -> bool:
    """True for the operand of ``typeof`` (which never throws for an undeclared name)."""
    parent = node.parent
    if parent is None or parent.type != "unary_expression":
        return False
    operator = parent.child_by_field_id(Field.OPERATOR)
    return operator is not None and operator.type == "typeof"


EXPRESSIONS.update({"object": Literals.object_literal, "array": Literals.array_literal})
