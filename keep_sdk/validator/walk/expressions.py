"""Expressions: evaluation to the values the analysis tracks, in evaluation order.

Contract: `expr` returns the value of an expression (None when untracked)
and the flow state after evaluating it; every expression type without a
handler of its own evaluates its children in order. Short-circuit and
conditional operators join the states of their branches. Reads of
module-level state are recorded as `SharedStateAccess`, computed access to
and spreading of capabilities as `DynamicCapability`.
"""

from __future__ import annotations

import tree_sitter

from keep_sdk.contract.globals import SANDBOX_GLOBALS
from keep_sdk.validator.facts import GlobalUse, GlobalUseKind, UndefinedName
from keep_sdk.validator.fields import Field
from keep_sdk.validator.globals_scan import declared_in_script, declared_with_var
from keep_sdk.validator.scope import (
    FUNCTION_TYPES,
    FunctionValue,
    GlobalRef,
    ModuleState,
    Scope,
    StringValue,
    Value,
    is_capability,
    string_literal,
    template_text,
)
from keep_sdk.validator.walk._dispatch import EXPRESSIONS
from keep_sdk.validator.walk._state import WalkState
from keep_sdk.validator.walk.flow import Flow, join
from keep_sdk.validator.walk.limits import MAX_NESTING

__all__ = ["NEVER_FREE", "Expressions"]

Node = tree_sitter.Node

_PROPERTY_TYPES = frozenset({"property_identifier", "private_property_identifier"})
_STATE_KINDS = frozenset({"const", "let", "var", "class"})
NEVER_FREE = frozenset({"arguments", "async", "of", "get", "set", "let", "static", "yield"})
"""Identifiers that are bound implicitly (``arguments``) or are contextual keywords."""


class Expressions(WalkState):
    """The expression handlers that evaluate values."""

    def expr(self, node: Node, scope: Scope, state: Flow) -> tuple[Value | None, Flow]:
        self.steps += 1
        if self.depth >= MAX_NESTING:
            self.limit(node, "nesting", MAX_NESTING)
            return None, state
        self.depth += 1
        handler = EXPRESSIONS.get(node.type)
        if handler is not None:
            result = handler(self, node, scope, state)
            self.depth -= 1
            return result
        value: Value | None = None
        for child in node.named_children:
            value, state = self.expr(child, scope, state)
        self.depth -= 1
        return value, state

    def this(self, node: Node, scope: Scope, state: Flow) -> tuple[Value | None, Flow]:
        return self.this_value, state

    def nothing(self, node: Node, scope: Scope, state: Flow) -> tuple[Value | None, Flow]:
        return None, state

    def passthrough(self, node: Node, scope: Scope, state: Flow) -> tuple[Value | None, Flow]:
        if node.named_child_count == 1:
            only = node.named_child(0)
            if only is not None and only.type != "comment":
                return self.expr(only, scope, state)
        value: Value | None = None
        for child in node.named_children:
            if child.type != "comment":
                value, state = self.expr(child, scope, state)
        return value, state

    def string(self, node: Node, scope: Scope, state: Flow) -> tuple[Value | None, Flow]:
        text = string_literal(node, self.data)
        return (StringValue(text) if text is not None else None), state

    def template_string(self, node: Node, scope: Scope, state: Flow) -> tuple[Value | None, Flow]:
        """Walk the substitutions; the template is a `StringValue` when each of them is a
        string (``${NS}.submitted`` with ``NS`` a string constant)."""
        values: dict[int, str] = {}
        for child in node.named_children:
            if child.type == "template_substitution":
                for inner in child.named_children:
                    value, state = self.expr(inner, scope, state)
                    if isinstance(value, StringValue):
                        values[inner.id] = value.text
        text = template_text(node, self.data, lambda inner: values.get(inner.id))
        return (StringValue(text) if text is not None else None), state

    def identifier(self, node: Node, scope: Scope, state: Flow) -> tuple[Value | None, Flow]:
        name = self.data[node.start_byte : node.end_byte].decode("utf-8", "replace")
        binding = scope.lookup(name)
        if binding is None:
            if name not in SANDBOX_GLOBALS and name not in NEVER_FREE and self.recording:
                self.free_name(node, name)
            return GlobalRef(name), state
        if binding.module:
            if self.is_state_binding(binding):
                self.shared(node, name, "read", binding)
            if binding.value is None and binding.kind in _STATE_KINDS:
                closure = self.module_closure(binding) if binding.kind == "const" else None
                return (closure or ModuleState(name)), state
        return binding.value, state

    def free_name(self, node: Node, name: str) -> None:
        """Record a read of a name neither the scope chain nor the sandbox defines."""
        if declared_with_var(self.analysis, name):
            return
        if declared_in_script(self.analysis, name):
            fact = UndefinedName(self.handler, node, self.site(node), self.frame.via, name)
            self.analysis.undefined_names.append(fact)
        else:
            use = GlobalUse(node, name, GlobalUseKind.UNAVAILABLE, self.handler)
            self.analysis.globals.append(use)

    def function_literal(self, node: Node, scope: Scope, state: Flow) -> tuple[Value | None, Flow]:
        function = FunctionValue(node, scope)
        if node.id not in self.walked:
            self.created.setdefault(node.id, function)
        return function, state

    def class_methods(self, node: Node, scope: Scope) -> None:
        """Record the methods, accessors and function-valued fields of the class `node` as
        functions created here (walked, like object literal methods, as never called)."""
        body = node.child_by_field_id(Field.BODY)
        if body is None:
            return
        for member in body.named_children:
            if member.type == "method_definition":
                self.function_literal(member, scope, False)
            elif member.type == "field_definition":
                value = member.child_by_field_id(Field.VALUE)
                if value is not None and value.type in FUNCTION_TYPES:
                    self.function_literal(value, scope, False)

    def class_expression(self, node: Node, scope: Scope, state: Flow) -> tuple[Value | None, Flow]:
        self.class_methods(node, scope)
        return None, state

    def member_expression(self, node: Node, scope: Scope, state: Flow) -> tuple[Value | None, Flow]:
        chain: list[tuple[Node, Node]] = []
        current: Node | None = node
        while current is not None and current.type == "member_expression":
            children = current.named_children
            obj = children[0] if children else None
            prop = children[-1] if len(children) > 1 else None
            if prop is None or prop.type not in _PROPERTY_TYPES or obj is None:
                obj = current.child_by_field_id(Field.OBJECT)
                prop = current.child_by_field_id(Field.PROPERTY)
            if obj is None or prop is None:
                return None, state
            chain.append((current, prop))
            current = obj
        if current is None:
            return None, state
        value, state = self.expr(current, scope, state)
        data = self.data
        for member, prop in reversed(chain):
            if value is None:
                return None, state
            name = data[prop.start_byte : prop.end_byte].decode("utf-8", "replace")
            value = self.member(value, name, member)
        return value, state

    def subscript_expression(
        self, node: Node, scope: Scope, state: Flow
    ) -> tuple[Value | None, Flow]:
        obj = node.child_by_field_id(Field.OBJECT)
        index = node.child_by_field_id(Field.INDEX)
        if obj is None or index is None:
            return None, state
        value, state = self.expr(obj, scope, state)
        key = string_literal(index, self.data)
        if key is None and index.type == "number":
            key = self.text(index)
        if key is not None:
            return self.member(value, key, node), state
        _, state = self.expr(index, scope, state)
        if is_capability(value) and self.recording:
            self.dynamic(node, "computed", self.describe(value))
        return None, state

    def spread_element(self, node: Node, scope: Scope, state: Flow) -> tuple[Value | None, Flow]:
        value, state = self.passthrough(node, scope, state)
        if is_capability(value) and self.recording:
            self.dynamic(node, "escapes", self.describe(value))
        return None, state

    def binary_expression(self, node: Node, scope: Scope, state: Flow) -> tuple[Value | None, Flow]:
        left = node.child_by_field_id(Field.LEFT)
        right = node.child_by_field_id(Field.RIGHT)
        operator = node.child_by_field_id(Field.OPERATOR)
        if left is not None:
            _, state = self.expr(left, scope, state)
        if right is None:
            return None, state
        if operator is not None and operator.type in ("&&", "||", "??"):
            _, right_state = self.expr(right, scope, state)
            return None, join(state, right_state)
        _, state = self.expr(right, scope, state)
        return None, state

    def ternary_expression(
        self, node: Node, scope: Scope, state: Flow
    ) -> tuple[Value | None, Flow]:
        condition = node.child_by_field_id(Field.CONDITION)
        if condition is not None:
            _, state = self.expr(condition, scope, state)
        results: list[Value | None] = []
        end: Flow = None
        for field_name in ("consequence", "alternative"):
            branch = node.child_by_field_name(field_name)
            if branch is None:
                continue
            value, branch_state = self.expr(branch, scope, state)
            results.append(value)
            end = join(end, branch_state)
        same = results and all(r == results[0] for r in results)
        return (results[0] if same else None), end

    def unary_expression(self, node: Node, scope: Scope, state: Flow) -> tuple[Value | None, Flow]:
        operator = node.child_by_field_id(Field.OPERATOR)
        argument = node.child_by_field_id(Field.ARGUMENT)
        if argument is None:
            return None, state
        if operator is not None and operator.type == "delete":
            self.write_target(argument, None, scope, state)
            return None, state
        if operator is not None and operator.type == "typeof" and argument.type == "identifier":
            name = self.text(argument)
            if scope.lookup(name) is None:
                return None, state
        _, state = self.expr(argument, scope, state)
        return None, state


EXPRESSIONS.update(
    {
        "identifier": Expressions.identifier,
        "member_expression": Expressions.member_expression,
        "subscript_expression": Expressions.subscript_expression,
        "await_expression": Expressions.passthrough,
        "parenthesized_expression": Expressions.passthrough,
        "unary_expression": Expressions.unary_expression,
        "binary_expression": Expressions.binary_expression,
        "ternary_expression": Expressions.ternary_expression,
        "string": Expressions.string,
        "template_string": Expressions.template_string,
        "arrow_function": Expressions.function_literal,
        "function_expression": Expressions.function_literal,
        "function": Expressions.function_literal,
        "generator_function": Expressions.function_literal,
        "spread_element": Expressions.spread_element,
        "class": Expressions.class_expression,
        "number": Expressions.nothing,
        "regex": Expressions.nothing,
        "true": Expressions.nothing,
        "false": Expressions.nothing,
        "null": Expressions.nothing,
        "undefined": Expressions.nothing,
        "this": Expressions.this,
        "super": Expressions.nothing,
        "comment": Expressions.nothing,
    }
)
