"""Writes: assignments, updates, ``delete`` and calls that change objects, as shared-state facts.

Contract: a write to a module-level binding, to an object a module-level
binding holds, to ``globalThis`` or to an undeclared name is recorded as a
`SharedStateAccess`; which methods and global functions change objects comes
from the rules' `WalkVocabulary`. Writing over a capability or storing one
is recorded as `DynamicCapability`. Local bindings get the assigned value.
"""

from __future__ import annotations

import tree_sitter

from keep_sdk.validator.fields import Field
from keep_sdk.validator.scope import (
    FUNCTION_TYPES,
    Binding,
    ModuleState,
    Scope,
    StringValue,
    Value,
    is_capability,
    string_literal,
)
from keep_sdk.validator.walk._dispatch import EXPRESSIONS
from keep_sdk.validator.walk._state import WalkState
from keep_sdk.validator.walk.flow import Flow
from keep_sdk.validator.walk.values import is_static

__all__ = ["Writes"]

Node = tree_sitter.Node


class Writes(WalkState):
    """Assignment handlers and shared-state tracking."""

    def is_state_binding(self, binding: Binding) -> bool:
        if binding.kind in ("let", "var"):
            return True
        if binding.kind != "const" or binding.init is None:
            return False
        return binding.init.type not in FUNCTION_TYPES and not isinstance(
            binding.value, StringValue
        )

    def update_expression(self, node: Node, scope: Scope, state: Flow) -> tuple[Value | None, Flow]:
        argument = node.child_by_field_id(Field.ARGUMENT)
        if argument is not None:
            self.write_target(argument, None, scope, state)
        return None, state

    def assignment(self, node: Node, scope: Scope, state: Flow) -> tuple[Value | None, Flow]:
        left = node.child_by_field_id(Field.LEFT)
        right = node.child_by_field_id(Field.RIGHT)
        value: Value | None = None
        if right is not None:
            value, state = self.expr(right, scope, state)
        if node.type == "augmented_assignment_expression":
            value = None
        if left is not None:
            self.write_target(left, value, scope, state)
        return value, state

    def write_target(self, target: Node, value: Value | None, scope: Scope, state: Flow) -> None:
        kind = target.type
        if kind == "parenthesized_expression" and target.named_child_count == 1:
            self.write_target(target.named_children[0], value, scope, state)
            return
        if kind == "identifier":
            name = self.text(target)
            binding = scope.lookup(name)
            if binding is None:
                self.shared(target, name, "implicit-global")
                return
            if binding.module:
                self.shared(target, name, "write", binding)
                if is_capability(value) and self.recording:
                    self.dynamic(target, "escapes", self.describe(value))
                return
            if is_capability(binding.value) and binding.value != value and self.recording:
                self.dynamic(target, "reassigned", self.describe(binding.value))
            if binding.kind != "const":
                binding.value = value
            return
        if kind in ("member_expression", "subscript_expression"):
            obj = target.child_by_field_id(Field.OBJECT)
            if obj is None:
                return
            obj_value, _ = self.expr(obj, scope, state)
            if kind == "subscript_expression":
                index = target.child_by_field_id(Field.INDEX)
                if index is not None and string_literal(index, self.data) is None:
                    self.expr(index, scope, state)
            if is_capability(obj_value):
                if self.recording:
                    self.dynamic(target, "reassigned", self.describe(obj_value))
                return
            if is_capability(value) and self.recording:
                self.dynamic(target, "escapes", self.describe(value))
            if isinstance(obj_value, ModuleState):
                self.module_state_changed(target, obj_value, scope)
                return
            if obj.type == "this":
                owner = self.static_owner()
                if owner is not None:
                    self.module_state_changed(target, ModuleState(owner), scope)
                    return
            self.mutated_object(obj, scope, target)
            return
        for child in target.named_children:
            if child.type in ("identifier", "shorthand_property_identifier_pattern"):
                self.write_target_name(child, scope)
            elif child.type in ("pair_pattern", "object_assignment_pattern", "assignment_pattern"):
                inner = child.child_by_field_id(Field.VALUE) or child.child_by_field_id(Field.LEFT)
                if inner is not None:
                    self.write_target(inner, None, scope, state)
            else:
                self.write_target(child, None, scope, state)

    def write_target_name(self, node: Node, scope: Scope) -> None:
        name = self.text(node)
        binding = scope.lookup(name)
        if binding is None:
            self.shared(node, name, "implicit-global")
        elif binding.module:
            self.shared(node, name, "write", binding)

    def mutated_object(self, obj: Node, scope: Scope, at: Node) -> None:
        root = obj
        while root.type in (
            "member_expression",
            "subscript_expression",
            "parenthesized_expression",
        ):
            inner = (
                root.child_by_field_id(Field.OBJECT)
                if root.type != "parenthesized_expression"
                else (root.named_children[0] if root.named_child_count else None)
            )
            if inner is None:
                return
            root = inner
        if root.type != "identifier":
            return
        name = self.text(root)
        binding = scope.lookup(name)
        if binding is None:
            if name == "globalThis":
                self.shared(at, name, "global-write")
            return
        if binding.module and binding.kind != "import":
            self.shared(at, name, "mutate", binding)
        elif isinstance(binding.value, ModuleState):
            self.module_state_changed(at, binding.value, scope)

    def static_owner(self) -> str | None:
        """The module-level class whose static method the walk is in (`this` is that class)."""
        if not self.frames:
            return None
        method = self.frame.node
        if method.type != "method_definition" or not is_static(method):
            return None
        body = method.parent
        declaration = body.parent if body is not None else None
        if declaration is None or declaration.type != "class_declaration":
            return None
        name = declaration.child_by_field_id(Field.NAME)
        if name is None:
            return None
        binding = self.module.bindings.get(self.text(name))
        if binding is None or binding.init is None or binding.init.id != declaration.id:
            return None
        return binding.name

    def module_state_changed(self, at: Node, state: ModuleState, scope: Scope) -> None:
        """Record a change, at `at`, to the object the module-level binding of `state` holds."""
        binding = self.module.bindings.get(state.name)
        if binding is None:
            closed = scope.lookup(state.name)
            binding = closed if closed is not None and closed.module else None
        if binding is not None:
            self.shared(at, state.name, "mutate", binding)

    def method_call_on_module_object(
        self, callee: Node, scope: Scope, value: Value | None = None
    ) -> None:
        if callee.type != "member_expression":
            return
        prop = callee.child_by_field_id(Field.PROPERTY)
        obj = callee.child_by_field_id(Field.OBJECT)
        if prop is None or obj is None or self.text(prop) not in self.vocabulary.receiver_writers:
            return
        if isinstance(value, ModuleState):
            self.module_state_changed(callee, value, scope)
            return
        self.mutated_object(obj, scope, callee)


EXPRESSIONS.update(
    {
        "assignment_expression": Writes.assignment,
        "augmented_assignment_expression": Writes.assignment,
        "update_expression": Writes.update_expression,
    }
)
