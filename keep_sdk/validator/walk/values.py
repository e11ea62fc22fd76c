"""The values expressions evaluate to as the walk resolves members of ctx, connectors and globals.

Contract: `member` gives the value of ``value.<name>``: a connector of ctx, an
operation of a connector (recording an `UnknownOperationUse` when the
connector manifest does not declare it), a longer global path, or a promise
method of a ctx call's result; None when the analysis does not track it.
"""

from __future__ import annotations

from dataclasses import dataclass

import tree_sitter

from keep_sdk.model import OperationKind
from keep_sdk.validator.facts import CapabilityCall, UnknownOperationUse
from keep_sdk.validator.fields import Field
from keep_sdk.validator.scope import (
    CTX,
    CTX_METHODS,
    FUNCTION_TYPES,
    Binding,
    CallResult,
    ClosureObject,
    ConnectorValue,
    CtxMethodValue,
    FunctionValue,
    GlobalRef,
    ModuleState,
    OperationValue,
    Scope,
    Value,
    declare_statement,
    string_literal,
)
from keep_sdk.validator.walk._state import WalkState

__all__ = ["RESOLVED", "PromiseMethod", "ResolvedPromise", "Values", "is_static"]

Node = tree_sitter.Node


@dataclass(frozen=True, slots=True, eq=False)
class PromiseMethod(Value):
    """``.then``/``.catch``/``.finally`` of the promise a ctx call returned.

    `call` is None for the promise of ``Promise.resolve(...)``: its callbacks
    run once, in order, like those of a ctx call.
    """

    call: CapabilityCall | None
    name: str


@dataclass(frozen=True, slots=True)
class ResolvedPromise(Value):
    """``Promise.resolve(...)``, and what its ``.then`` chain returns."""


RESOLVED = ResolvedPromise()


def is_static(member: Node) -> bool:
    """True for a ``static`` member of a class body."""
    return any(child.type == "static" for child in member.children)


class Values(WalkState):
    """Member resolution and naming of capability values."""

    def key_name(self, key: Node) -> str | None:
        kind = key.type
        if kind in ("property_identifier", "number"):
            return self.text(key)
        if kind == "string":
            return string_literal(key, self.data)
        if kind == "computed_property_name" and key.named_child_count == 1:
            return string_literal(key.named_children[0], self.data)
        return None

    def describe(self, value: Value | None) -> str:
        if isinstance(value, ConnectorValue):
            return f"ctx.{value.name}"
        if isinstance(value, OperationValue):
            return f"ctx.{value.connector}.{value.operation}"
        if isinstance(value, CtxMethodValue):
            return f"ctx.{value.name}"
        return "ctx"

    def member(self, value: Value | None, name: str, node: Node) -> Value | None:
        if value is CTX:
            if name in CTX_METHODS:
                return CtxMethodValue(name)
            return ConnectorValue(name)
        if isinstance(value, ConnectorValue):
            self.check_operation(value.name, name, node)
            return OperationValue(value.name, name)
        if isinstance(value, OperationValue | CtxMethodValue):
            if name in ("call", "apply", "bind"):
                return value
            return None
        if isinstance(value, GlobalRef):
            return GlobalRef(f"{value.path}.{name}")
        if isinstance(value, ModuleState):
            return (
                self.static_method(value.name, name)
                or self.instance_method(value.name, name)
                or value
            )
        if isinstance(value, ClosureObject):
            return value.functions.get(name) or ModuleState(value.holder)
        if isinstance(value, CallResult) and name in ("then", "catch", "finally"):
            return PromiseMethod(value.call, name)
        if value is RESOLVED and name in ("then", "catch", "finally"):
            return PromiseMethod(None, name)
        return None

    def static_method(self, class_name: str, name: str) -> FunctionValue | None:
        """The static method `name` of the module-level class `class_name`, to follow its calls."""
        binding = self.module.bindings.get(class_name)
        if binding is None or binding.kind != "class" or binding.init is None:
            return None
        body = binding.init.child_by_field_id(Field.BODY)
        if body is None:
            return None
        for member in body.named_children:
            if member.type != "method_definition" or not is_static(member):
                continue
            key = member.child_by_field_id(Field.NAME)
            if key is not None and self.text(key) == name:
                return FunctionValue(member, self.module, f"{class_name}.{name}")
        return None

    def instance_method(self, holder: str, name: str) -> FunctionValue | None:
        """The method `name` of the module-level instance `holder` (``const c = new C()``
        with ``C`` a module-level class), walked with ``this`` as that instance."""
        binding = self.module.bindings.get(holder)
        init = binding.init if binding is not None else None
        if init is None or init.type != "new_expression":
            return None
        constructor = init.child_by_field_id(Field.CONSTRUCTOR)
        if constructor is None or constructor.type != "identifier":
            return None
        owner = self.module.bindings.get(self.text(constructor))
        if owner is None or owner.kind != "class" or owner.init is None:
            return None
        body = owner.init.child_by_field_id(Field.BODY)
        for member in body.named_children if body is not None else ():
            if member.type != "method_definition" or is_static(member):
                continue
            key = member.child_by_field_id(Field.NAME)
            if key is not None and self.text(key) == name:
                return FunctionValue(
                    member, self.module, f"{holder}.{name}", this=ModuleState(holder)
                )
        return None

    def module_closure(self, binding: Binding) -> Value | None:
        """What the module-level `binding` holds when an IIFE initializes it
        (``const next = (() => { let n = 0; return () => ++n; })()``): the function, or
        object of functions, the IIFE returns, closing over the IIFE's variables as
        module-level bindings (they outlive a call as module state does). None otherwise.
        """
        init = binding.init
        if init is None:
            return None
        key = init.id
        if key in self.closures:
            return self.closures[key]
        self.closures[key] = None
        while init is not None and init.type == "parenthesized_expression":
            init = init.named_children[0] if init.named_child_count == 1 else None
        callee = init.child_by_field_id(Field.FUNCTION) if init is not None else None
        while callee is not None and callee.type == "parenthesized_expression":
            callee = callee.named_children[0] if callee.named_child_count == 1 else None
        if init is None or init.type != "call_expression" or callee is None:
            return None
        if callee.type not in FUNCTION_TYPES:
            return None
        body = callee.child_by_field_id(Field.BODY)
        if body is None or body.type != "statement_block":
            return None
        closure = Scope(parent=self.module)
        returned: Node | None = None
        for statement in body.named_children:
            declare_statement(statement, closure, self.data, module=True)
            if statement.type == "return_statement" and statement.named_child_count == 1:
                returned = statement.named_children[0]
        value = self.closure_value(returned, closure, binding.name)
        self.closures[key] = value
        return value

    def closure_value(self, node: Node | None, closure: Scope, holder: str) -> Value | None:
        """The function or object of functions `node` (an IIFE's returned value) gives."""
        if node is None:
            return None
        if node.type == "identifier":
            found = closure.bindings.get(self.text(node))
            value = found.value if found is not None else None
            if isinstance(value, FunctionValue):
                return FunctionValue(value.node, closure, holder)
            return None
        if node.type in FUNCTION_TYPES:
            return FunctionValue(node, closure, holder)
        if node.type != "object":
            return None
        functions: dict[str, FunctionValue] = {}
        for child in node.named_children:
            if child.type == "method_definition":
                key = child.child_by_field_id(Field.NAME)
                if key is not None:
                    functions[self.text(key)] = FunctionValue(
                        child, closure, f"{holder}.{self.text(key)}"
                    )
            elif child.type in ("pair", "shorthand_property_identifier"):
                key = child.child_by_field_id(Field.KEY) if child.type == "pair" else child
                value_node = child.child_by_field_id(Field.VALUE) if child.type == "pair" else child
                name = self.key_name(key) if key is not None and child.type == "pair" else None
                if child.type != "pair":
                    name = self.text(child)
                function = self.closure_value(value_node, closure, holder)
                if name is not None and isinstance(function, FunctionValue):
                    functions[name] = FunctionValue(function.node, closure, f"{holder}.{name}")
        return ClosureObject(holder, functions) if functions else None

    def check_operation(self, connector: str, operation: str | None, node: Node) -> None:
        if not self.recording or node.id in self.reported_members:
            return
        operations = self.kinds.get(connector)
        if operations is not None and operation is not None and operation in operations:
            return
        self.reported_members.add(node.id)
        self.analysis.unknown_operations.append(
            UnknownOperationUse(
                self.handler, node, connector, operation, connector_known=operations is not None
            )
        )

    def operation_kind(self, connector: str, operation: str) -> OperationKind | None:
        return self.kinds.get(connector, {}).get(operation)
