"""Calls: following helpers and callbacks with the caller's values and flow state.

Contract: a call of a function the walk can see (`FunctionValue`) walks its
body with the arguments bound to its parameters and continues with the
state it returns; functions passed to unknown calls are walked as callbacks
(possibly never run, possibly many times). `invoke` respects the budgets of
`walk.limits`, recording an `AnalysisLimit` where it stops; a recursive call
is not walked again, and is recorded as a ``recursion`` limit when the
function it re-enters makes a mutation (which it could then repeat). Capabilities
passed to code the walk cannot see are recorded as escaping; calls of globals
in the rules' `WalkVocabulary` are recorded as `GlobalUse`.
"""

from __future__ import annotations

from dataclasses import replace

import tree_sitter

from keep_sdk.validator.facts import CapabilityCall, GlobalUse, GlobalUseKind
from keep_sdk.validator.fields import Field
from keep_sdk.validator.scope import (
    CTX,
    FUNCTION_TYPES,
    Binding,
    CallResult,
    ConnectorValue,
    CtxMethodValue,
    FunctionValue,
    GlobalRef,
    ModuleState,
    OperationValue,
    Scope,
    Value,
    is_capability,
)
from keep_sdk.validator.walk._dispatch import EXPRESSIONS
from keep_sdk.validator.walk._state import WalkState
from keep_sdk.validator.walk.flow import Flow, Frame, join
from keep_sdk.validator.walk.limits import MAX_HELPER_DEPTH, STEP_BUDGET
from keep_sdk.validator.walk.mutations import PROMISE_COMBINATORS
from keep_sdk.validator.walk.values import RESOLVED, PromiseMethod

__all__ = ["Calls"]

Node = tree_sitter.Node

_NAMED_EXPRESSIONS = frozenset({"function_expression", "function", "generator_function"})
"""Function expressions whose own name is bound inside their body."""
_PASSABLE = FUNCTION_TYPES | {"function_declaration", "generator_function_declaration"}
"""Functions a name passed as an argument may stand for and be walked as the callback."""
_ELEMENT_METHODS = frozenset(
    {"find", "findLast", "at", "filter", "slice", "values", "get", "flat", "toSorted"}
)
"""Methods whose result holds the receiver's own elements (not copies of them)."""


class Calls(WalkState):
    """Call and ``new`` handlers, and helper invocation."""

    def arguments(self, node: Node) -> list[Node]:
        last = node.named_child(node.named_child_count - 1) if node.named_child_count else None
        arguments = last if last is not None and last.type == "arguments" else None
        if arguments is None:
            arguments = node.child_by_field_id(Field.ARGUMENTS)
        if arguments is None or arguments.type != "arguments":
            return []
        return [a for a in arguments.named_children if a.type != "comment"]

    def function_body(self, function: Node, scope: Scope, state: Flow) -> tuple[Value | None, Flow]:
        body = function.child_by_field_id(Field.BODY)
        if body is None:
            return None, state
        if body.type != "statement_block":
            return self.expr(body, scope, state)
        end = self.block(body, scope, state)
        frame = self.frame
        exit_state = end
        for returned in frame.returns:
            exit_state = join(exit_state, returned)
        values = frame.values
        result = values[0] if values and all(v == values[0] for v in values) else None
        return result, exit_state

    def invoke(
        self,
        function: FunctionValue,
        arguments: list[Value | None],
        state: Flow,
        call: Node,
        *,
        callback: bool = False,
    ) -> tuple[Value | None, Flow]:
        node = function.node
        if node.id in self.active:
            self.recursive_calls.setdefault(node.id, call)
            return None, state
        if len(self.frames) > MAX_HELPER_DEPTH:
            self.limit(call, "helper-depth", MAX_HELPER_DEPTH)
            return None, state
        if self.steps > STEP_BUDGET:
            self.limit(call, "steps", STEP_BUDGET)
            return None, state
        self.walked.add(node.id)
        inside = self.handler.node.start_byte <= node.start_byte < self.handler.node.end_byte
        if inside or not self.frames:
            site = self.frame.site if self.frames else None
            via = self.frame.via if self.frames else ()
        else:
            site = self.site(call)
            via = (*self.frame.via, function.name or "function")
        scope = Scope(parent=function.scope)
        if node.type in _NAMED_EXPRESSIONS:
            own = node.child_by_field_id(Field.NAME)
            if own is not None:
                name = self.text(own)
                scope.declare(Binding(name, "function", own, function, node))
        saved = (self.in_callback, self.pending_label, self.after_reported)
        hosts = self.callback_hosts
        this = self.this_value
        if node.type != "arrow_function":
            self.this_value = function.this
        if callback:
            self.in_callback = True
            self.callback_hosts = (*hosts, self.callback_host)
        self.callback_host = ""
        self.pending_label = None
        self.frames.append(Frame(node, via, site))
        self.active.add(node.id)
        mutations = self.mutations
        try:
            entry = self.bind_parameters(node, arguments, scope, state)
            value, end = self.function_body(node, scope, entry)
            if self.recursive_calls:
                recursive = self.recursive_calls.pop(node.id, None)
                if recursive is not None and self.mutations > mutations:
                    self.limit(recursive, "recursion", 1)
        finally:
            self.active.discard(node.id)
            self.frames.pop()
            self.in_callback, self.pending_label, self.after_reported = saved
            self.callback_hosts = hosts
            self.this_value = this
        if callback:
            if is_capability(value) and self.recording:
                self.dynamic(node, "returned", self.describe(value))
            return None, join(state, end)
        return value, end

    def call_expression(self, node: Node, scope: Scope, state: Flow) -> tuple[Value | None, Flow]:
        children = node.named_children
        callee = children[0] if children else None
        if callee is None or callee.type == "comment":
            callee = node.child_by_field_id(Field.FUNCTION)
        if callee is None:
            return None, state
        last = children[-1] if children else None
        if last is not None and last.type == "arguments":
            argument_nodes = [a for a in last.named_children if a.type != "comment"]
        else:
            argument_nodes = self.arguments(node)
        if callee.type == "import" or self.is_await(callee):
            value: Value | None = None
            for argument in argument_nodes:
                value, state = self.expr(argument, scope, state)
            return (value if callee.type != "import" else None), state
        callee_value, state = self.expr(callee, scope, state)
        if isinstance(callee_value, PromiseMethod):
            return self.promise_continuation(callee_value, argument_nodes, scope, state, node)
        if isinstance(callee_value, FunctionValue):
            values: list[Value | None] = []
            for argument in argument_nodes:
                value, state = self.expr(argument, scope, state)
                values.append(value)
            result, state = self.invoke(callee_value, values, state, node)
            if isinstance(result, CallResult) and result.call.is_mutation:
                self.result_returned(result.call, node)
            return result, state
        before = state
        values = []
        callbacks: list[FunctionValue] = []
        escaping: list[tuple[Node, Value | None]] = []
        for argument in argument_nodes:
            value, state = self.expr(argument, scope, state)
            values.append(value)
            if isinstance(value, FunctionValue) and self.passed_function(argument, value):
                callbacks.append(value)
            elif is_capability(value):
                escaping.append((argument, value))
        if isinstance(callee_value, OperationValue | CtxMethodValue):
            return self.capability_call(node, callee_value, argument_nodes, values, state)
        if isinstance(callee_value, ConnectorValue) or callee_value is CTX:
            if isinstance(callee_value, ConnectorValue):
                self.check_operation(callee_value.name, None, callee)
            return None, state
        if isinstance(callee_value, GlobalRef):
            self.global_call(callee_value.path, node, argument_nodes, scope)
            if (
                callee_value.path in PROMISE_COMBINATORS
                and isinstance(state, CapabilityCall)
                and state is not before
            ):
                return CallResult(state), state
            if callee_value.path == "Promise.resolve" and not callbacks:
                return RESOLVED, state
        self.method_call_on_module_object(callee, scope, callee_value)
        if escaping and self.recording and not self.only_reads_arguments(callee_value):
            for argument, value in escaping:
                self.dynamic(argument, "escapes", self.describe(value))
        for callback in callbacks:
            self.callback_host = self.callee_name(callee)
            _, state = self.invoke(callback, [], state, node, callback=True)
        if isinstance(callee_value, ModuleState) and self.returns_element(callee):
            return callee_value, state
        return None, state

    def is_await(self, callee: Node) -> bool:
        """True for the ``await`` of ``await (x)(...)``, ``await (x).y`` or ``await (x)[0]``.

        The grammar reads ``await (x)`` followed by a call, member or subscript as a
        call of a function named ``await``. In a module ``await`` is always reserved
        (the engine refuses any other use), so the "call" is an await of its
        parenthesized arguments and the rest of the chain applies to them.
        """
        return callee.type == "identifier" and self.text(callee) == "await"

    def passed_function(self, argument: Node, value: FunctionValue) -> bool:
        """Whether `argument` hands a function of the script to its callee as a callback: a
        function written there, or a name bound to a function declaration or to a function
        expression (``ids.map(fetchOne)``); never a method, getter or hook of an object."""
        if argument.type in FUNCTION_TYPES:
            return True
        return argument.type == "identifier" and value.node.type in _PASSABLE

    def callee_name(self, callee: Node) -> str:
        """The name a call's callee ends with: ``map`` for ``items.map``, ``""`` for none."""
        if callee.type == "member_expression":
            name = callee.child_by_field_id(Field.PROPERTY)
            return self.text(name) if name is not None else ""
        return self.text(callee) if callee.type == "identifier" else ""

    def returns_element(self, callee: Node) -> bool:
        """True for ``x.find(...)`` and the other methods whose result shares `x`'s objects."""
        if callee.type != "member_expression":
            return False
        prop = callee.child_by_field_id(Field.PROPERTY)
        return prop is not None and self.text(prop) in _ELEMENT_METHODS

    def result_returned(self, call: CapabilityCall, site: Node) -> None:
        """Give `call` the use a helper's caller makes of it, when the helper returned it."""
        if call.result_use is not None or not self.recording:
            return
        use = self.result_use(site)
        if use is None:
            return
        calls = self.analysis.calls
        for index in range(len(calls) - 1, -1, -1):
            if calls[index] is call:
                calls[index] = replace(call, result_use=use)
                return

    def only_reads_arguments(self, value: Value | None) -> bool:
        if not isinstance(value, GlobalRef):
            return False
        root, dot, _ = value.path.partition(".")
        return bool(dot) and root in self.vocabulary.inspecting_globals

    def global_call(self, path: str, node: Node, arguments: list[Node], scope: Scope) -> None:
        vocabulary = self.vocabulary
        kind = vocabulary.calls.get(path)
        if kind is not None and self.recording:
            self.analysis.globals.append(self.global_use(node, path, kind))
        if path in vocabulary.argument_writers and arguments:
            self.mutated_object(arguments[0], scope, node)

    def global_use(self, node: Node, name: str, kind: GlobalUseKind) -> GlobalUse:
        """A `GlobalUse` at `node` in the walk's current frame (with its call site and
        helpers when it is inside a helper)."""
        if not self.frames:
            return GlobalUse(node, name, kind, self.handler)
        return GlobalUse(node, name, kind, self.handler, self.site(node), self.frame.via)

    def new_expression(self, node: Node, scope: Scope, state: Flow) -> tuple[Value | None, Flow]:
        constructor = node.child_by_field_id(Field.CONSTRUCTOR)
        value: Value | None = None
        if constructor is not None:
            value, state = self.expr(constructor, scope, state)
        argument_nodes = self.arguments(node)
        if isinstance(value, GlobalRef) and not argument_nodes and self.recording:
            kind = self.vocabulary.constructions.get(value.path)
            if kind is not None:
                name = f"new {value.path}()"
                self.analysis.globals.append(self.global_use(node, name, kind))
        is_promise = isinstance(value, GlobalRef) and value.path == "Promise"
        for argument in argument_nodes:
            argument_value, state = self.expr(argument, scope, state)
            if isinstance(argument_value, FunctionValue) and self.passed_function(
                argument, argument_value
            ):
                if is_promise:
                    _, state = self.invoke(argument_value, [], state, node)
                else:
                    self.callback_host = ""
                    _, state = self.invoke(argument_value, [], state, node, callback=True)
            elif is_capability(argument_value) and self.recording:
                self.dynamic(argument, "escapes", self.describe(argument_value))
        return None, state


EXPRESSIONS.update(
    {"call_expression": Calls.call_expression, "new_expression": Calls.new_expression}
)
