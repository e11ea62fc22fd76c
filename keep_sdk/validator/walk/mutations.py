"""Calls through ctx: the `CapabilityCall` facts, and the path state a mutation leaves.

Contract: every call of a connector operation or ctx method becomes a
`CapabilityCall` with where it was made (loop, callback, ``try``) and what may
have run before it; after a mutation that is not detached, the flow state
is that mutation. A mutation's `result_use` is the node that uses its value,
if any; ``.then``/``.catch``/``.finally`` callbacks continue the path.
"""

from __future__ import annotations

import tree_sitter

from keep_sdk.contract.phases import MUTATING_KINDS
from keep_sdk.validator.facts import CapabilityCall, CodeAfterMutation, TopicUse
from keep_sdk.validator.fields import Field
from keep_sdk.validator.scope import (
    FUNCTION_TYPES,
    CallResult,
    CtxMethodValue,
    FunctionValue,
    OperationValue,
    Scope,
    StringValue,
    Value,
)
from keep_sdk.validator.walk._dispatch import EXPRESSIONS
from keep_sdk.validator.walk._state import WalkState
from keep_sdk.validator.walk.flow import Flow, join
from keep_sdk.validator.walk.values import RESOLVED, PromiseMethod

__all__ = ["PROMISE_COMBINATORS", "Mutations"]

Node = tree_sitter.Node

PROMISE_COMBINATORS = frozenset(
    {"Promise.all", "Promise.allSettled", "Promise.race", "Promise.any"}
)
"""Globals that pass the values of the promises they are given on to their own result."""


_INERT_OPERANDS = frozenset(
    {"identifier", "number", "string", "true", "false", "null", "undefined", "sequence_expression"}
)
"""Operands of a comma expression that run no code of their own."""


class Mutations(WalkState):
    """Capability calls and what follows a mutation."""

    def promise_continuation(
        self,
        method: PromiseMethod,
        arguments: list[Node],
        scope: Scope,
        state: Flow,
        node: Node,
    ) -> tuple[Value | None, Flow]:
        call = method.call
        end: Flow = state
        for index, argument in enumerate(arguments):
            value, state = self.expr(argument, scope, state)
            if not isinstance(value, FunctionValue):
                continue
            rejected = method.name == "catch" or (method.name == "then" and index == 1)
            if (
                (call is None or call.is_mutation)
                and isinstance(state, CapabilityCall)
                and self.is_mutate
                and self.recording
                and not self.detached
            ):
                self.analysis.code_after_mutation.append(
                    CodeAfterMutation(self.handler, argument, state)
                )
            saved = self.after_reported
            self.after_reported = True
            try:
                _, branch = self.invoke(value, [], state, node)
            finally:
                self.after_reported = saved
            end = join(end, branch) if rejected else branch
        return (CallResult(call) if call is not None else RESOLVED), end

    def sequence_expression(
        self, node: Node, scope: Scope, state: Flow
    ) -> tuple[Value | None, Flow]:
        """``a, b``: in `mutate`, the first operand that runs code after a mutation is recorded."""
        value: Value | None = None
        saved = self.after_reported
        try:
            for child in node.named_children:
                if child.type == "comment":
                    continue
                if (
                    isinstance(state, CapabilityCall)
                    and self.is_mutate
                    and not self.after_reported
                    and not self.detached
                    and self.recording
                    and child.type not in _INERT_OPERANDS
                ):
                    at = self.frame.site if self.frame.site is not None else child
                    self.analysis.code_after_mutation.append(
                        CodeAfterMutation(self.handler, at, state)
                    )
                    self.after_reported = True
                value, state = self.expr(child, scope, state)
        finally:
            self.after_reported = saved
        return value, state

    def capability_call(
        self,
        node: Node,
        callee: OperationValue | CtxMethodValue,
        arguments: list[Node],
        values: list[Value | None],
        state: Flow,
    ) -> tuple[Value | None, Flow]:
        if isinstance(callee, OperationValue):
            kind = self.operation_kind(callee.connector, callee.operation)
            call = CapabilityCall(
                handler=self.handler,
                node=node,
                site=self.site(node),
                via=self.frame.via,
                target=f"{callee.connector}.{callee.operation}",
                connector=callee.connector,
                operation=callee.operation,
                method=None,
                kind=kind,
                arguments=tuple(arguments),
                in_loop=self.in_loop,
                in_callback=self.in_callback,
                in_try=self.in_try > 0 or (kind in MUTATING_KINDS and self.caught(node)),
                detached=self.detached,
                callback_hosts=self.callback_hosts,
                after=state if isinstance(state, CapabilityCall) else None,
                result_use=self.result_use(node) if kind in MUTATING_KINDS else None,
            )
        else:
            call = CapabilityCall(
                handler=self.handler,
                node=node,
                site=self.site(node),
                via=self.frame.via,
                target=callee.name,
                connector=None,
                operation=None,
                method=callee.name,  # type: ignore[arg-type]
                kind=None,
                arguments=tuple(arguments),
                in_loop=self.in_loop,
                in_callback=self.in_callback,
                in_try=self.in_try > 0,
                detached=self.detached,
                callback_hosts=self.callback_hosts,
                topic=values[0].text if values and isinstance(values[0], StringValue) else None,
            )
            if self.recording:
                topic = values[0] if values else None
                self.analysis.topics.append(
                    TopicUse(
                        arguments[0] if arguments else node,
                        topic.text if isinstance(topic, StringValue) else None,
                        callee.name,  # type: ignore[arg-type]
                        self.handler,
                        self.handler.name,
                    )
                )
        if self.recording or (call.is_mutation and call.after is not None):
            self.analysis.calls.append(call)
        if call.is_mutation and not self.detached:
            self.mutations += 1
            state = call
            if self.try_states:
                self.try_states[-1].append(call)
        return CallResult(call), state

    def caught(self, node: Node) -> bool:
        parent = self.value_parent(node)
        return (
            parent is not None
            and parent.type == "member_expression"
            and self.member_name(parent) in ("catch", "then")
            and self.has_rejection_handler(parent)
        )

    def member_name(self, member: Node) -> str | None:
        prop = member.child_by_field_id(Field.PROPERTY)
        return self.text(prop) if prop is not None else None

    def has_rejection_handler(self, member: Node) -> bool:
        call = member.parent
        if call is None or call.type != "call_expression":
            return False
        count = len(self.arguments(call))
        return self.member_name(member) == "catch" or count >= 2

    def value_parent(self, node: Node) -> Node | None:
        parent = node.parent
        while parent is not None and parent.type in (
            "parenthesized_expression",
            "await_expression",
        ):
            node = parent
            parent = node.parent
        return parent

    def result_use(self, node: Node) -> Node | None:
        current = node
        while True:
            parent = current.parent
            while parent is not None and parent.type in (
                "parenthesized_expression",
                "await_expression",
            ):
                current = parent
                parent = current.parent
            if parent is None:
                return None
            kind = parent.type
            if kind in ("expression_statement", "return_statement"):
                return None
            if kind == "arrow_function":
                return None
            if kind == "unary_expression" and self.text(parent).startswith("void"):
                return None
            if kind == "ternary_expression":
                condition = parent.child_by_field_id(Field.CONDITION)
                if condition is not None and condition.id == current.id:
                    return parent
                current = parent
                continue
            if kind == "binary_expression":
                operator = parent.child_by_field_id(Field.OPERATOR)
                right = parent.child_by_field_id(Field.RIGHT)
                if (
                    operator is not None
                    and operator.type in ("&&", "||", "??")
                    and right is not None
                    and right.id == current.id
                ):
                    current = parent
                    continue
                return parent
            if kind == "sequence_expression":
                last = parent.named_children[-1] if parent.named_child_count else None
                if last is None or last.id != current.id:
                    return None
                current = parent
                continue
            if kind == "member_expression" and self.member_name(parent) in (
                "then",
                "catch",
                "finally",
            ):
                call = parent.parent
                if call is None or call.type != "call_expression":
                    return parent
                if self.member_name(parent) == "then":
                    arguments = self.arguments(call)
                    if arguments and arguments[0].type in FUNCTION_TYPES:
                        params = self.parameters(arguments[0])
                        if params:
                            return params[0]
                current = call
                continue
            if kind == "array":
                outer = parent.parent
                call = outer.parent if outer is not None else None
                if (
                    outer is not None
                    and outer.type == "arguments"
                    and call is not None
                    and call.type == "call_expression"
                ):
                    callee = call.child_by_field_id(Field.FUNCTION)
                    if callee is not None and self.text(callee) in PROMISE_COMBINATORS:
                        current = call
                        continue
                return parent
            return parent


EXPRESSIONS.update({"sequence_expression": Mutations.sequence_expression})
