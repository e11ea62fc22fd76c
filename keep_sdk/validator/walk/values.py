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
    CallResult,
    ConnectorValue,
    CtxMethodValue,
    FunctionValue,
    GlobalRef,
    ModuleState,
    OperationValue,
    Value,
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
            return self.static_method(value.name, name) or value
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
