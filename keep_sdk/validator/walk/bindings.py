"""Binding patterns: parameters, declarations and destructuring bind names to values in a scope.

Contract: `bind` declares every name a pattern introduces; a name destructured
from a capability gets the member the analysis resolves (`Values.member`),
anything else gets None (unknown). Default values are evaluated, so the flow
state returned includes what they run. Computed keys and ``...rest`` of a
capability are recorded as `DynamicCapability` facts.
"""

from __future__ import annotations

import tree_sitter

from keep_sdk.validator.fields import Field
from keep_sdk.validator.scope import (
    Binding,
    FunctionValue,
    ModuleState,
    Scope,
    Value,
    declarations,
    is_capability,
)
from keep_sdk.validator.walk._dispatch import STATEMENTS
from keep_sdk.validator.walk._state import WalkState
from keep_sdk.validator.walk.flow import Flow

__all__ = ["Bindings"]

Node = tree_sitter.Node


class Bindings(WalkState):
    """Binding of patterns to values."""

    def parameters(self, function: Node) -> list[Node]:
        single = function.child_by_field_id(Field.PARAMETER)
        if single is not None:
            return [single]
        params = function.child_by_field_id(Field.PARAMETERS)
        if params is None:
            return []
        return [p for p in params.named_children if p.type != "comment"]

    def bind_parameters(
        self, function: Node, values: list[Value | None], scope: Scope, state: Flow
    ) -> Flow:
        for index, param in enumerate(self.parameters(function)):
            value = values[index] if index < len(values) else None
            state = self.bind(param, value, scope, "param", state)
        return state

    def bind(
        self, pattern: Node, value: Value | None, scope: Scope, kind: str, state: Flow
    ) -> Flow:
        kind_of = pattern.type
        if kind_of == "identifier":
            name = self.data[pattern.start_byte : pattern.end_byte].decode("utf-8", "replace")
            scope.bindings[name] = Binding(name, kind, pattern, value)
        elif kind_of == "object_pattern":
            for child in pattern.named_children:
                state = self.bind_property(child, value, scope, kind, state)
        elif kind_of == "array_pattern":
            element = value if isinstance(value, ModuleState) else None
            for child in pattern.named_children:
                state = self.bind(child, element, scope, kind, state)
        elif kind_of == "assignment_pattern":
            left = pattern.child_by_field_id(Field.LEFT)
            right = pattern.child_by_field_id(Field.RIGHT)
            default, state = self.expr(right, scope, state) if right is not None else (None, state)
            if left is not None:
                state = self.bind(left, value if value is not None else default, scope, kind, state)
        elif kind_of == "rest_pattern":
            for child in pattern.named_children:
                state = self.bind(child, None, scope, kind, state)
        return state

    def bind_property(
        self, child: Node, value: Value | None, scope: Scope, kind: str, state: Flow
    ) -> Flow:
        kind_of = child.type
        if kind_of == "shorthand_property_identifier_pattern":
            name = self.text(child)
            scope.declare(Binding(name, kind, child, self.member(value, name, child)))
        elif kind_of == "pair_pattern":
            key = child.child_by_field_id(Field.KEY)
            target = child.child_by_field_id(Field.VALUE)
            key_name = self.key_name(key) if key is not None else None
            member: Value | None = None
            if key_name is None:
                if is_capability(value) and self.recording:
                    self.dynamic(child, "computed", self.describe(value))
            else:
                member = self.member(value, key_name, child)
            if target is not None:
                state = self.bind(target, member, scope, kind, state)
        elif kind_of == "object_assignment_pattern":
            left = child.child_by_field_id(Field.LEFT)
            right = child.child_by_field_id(Field.RIGHT)
            default, state = self.expr(right, scope, state) if right is not None else (None, state)
            if left is not None:
                name = self.text(left)
                member = self.member(value, name, left)
                scope.declare(Binding(name, kind, left, member if member is not None else default))
        elif kind_of == "rest_pattern":
            if is_capability(value) and self.recording:
                self.dynamic(child, "rest", self.describe(value))
            for inner in child.named_children:
                state = self.bind(inner, None, scope, kind, state)
        return state

    def declaration(self, node: Node, scope: Scope, state: Flow) -> Flow:
        kind, declarators = declarations(node)
        for declarator in declarators:
            target = declarator.child_by_field_id(Field.NAME)
            init = declarator.child_by_field_id(Field.VALUE)
            value: Value | None = None
            if init is not None:
                value, state = self.expr(init, scope, state)
                if isinstance(value, FunctionValue) and target is not None:
                    value = FunctionValue(value.node, value.scope, self.text(target))
            if target is not None:
                state = self.bind(target, value, scope, kind, state)
        return state


STATEMENTS.update(
    {
        "lexical_declaration": Bindings.declaration,
        "variable_declaration": Bindings.declaration,
        "using_declaration": Bindings.declaration,
    }
)
