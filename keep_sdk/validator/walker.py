"""Follow each handler's code: aliases of ctx, helpers, and which calls run after a mutation.

The walk is an abstract interpretation over the syntax tree. Expressions
evaluate to the few values that matter (ctx, a connector, an operation, a
function the walk can follow, the result of a ctx call, a string constant);
statements carry a flow state: unreachable (``None``), clean (``False``), or
the mutation call that may already have run on some path to this point.
Loops are walked twice so that a mutation reaching the back edge is seen by
the second pass; helper functions are walked at each call with the caller's
values bound to their parameters and the caller's flow state.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import tree_sitter

from keep_sdk.model import HandlerPhase, OperationKind
from keep_sdk.validator.facts import (
    Analysis,
    AnalysisLimit,
    CapabilityCall,
    CodeAfterMutation,
    DynamicCapability,
    GlobalUse,
    GlobalUseKind,
    Handler,
    SharedStateAccess,
    TopicUse,
    UnknownOperationUse,
)
from keep_sdk.validator.fields import Field
from keep_sdk.validator.scope import (
    CTX,
    CTX_METHODS,
    FUNCTION_TYPES,
    Binding,
    CallResult,
    ConnectorValue,
    CtxMethodValue,
    FunctionValue,
    GlobalRef,
    OperationValue,
    Scope,
    StringValue,
    Value,
    declarations,
    declare_statement,
    is_capability,
    string_literal,
)
from keep_sdk.validator.source import words

__all__ = ["walk_handlers"]

Node = tree_sitter.Node
Flow = CapabilityCall | bool | None

MUTATING_METHODS = frozenset(
    {
        "push",
        "pop",
        "shift",
        "unshift",
        "splice",
        "sort",
        "reverse",
        "fill",
        "copyWithin",
        "set",
        "add",
        "delete",
        "clear",
    }
)
OBJECT_WRITERS = frozenset(
    {"Object.assign", "Object.defineProperty", "Object.defineProperties", "Reflect.set"}
)
NONDETERMINISTIC_CALLS = frozenset(
    {"Date", "Date.now", "Math.random", "performance.now", "crypto.randomUUID"}
)
PROMISE_COMBINATORS = frozenset(
    {"Promise.all", "Promise.allSettled", "Promise.race", "Promise.any"}
)
_MAX_HELPER_DEPTH = 12
_STEP_BUDGET = 200_000
_MAX_ROUNDS = 50
_PROPERTY_TYPES = frozenset({"property_identifier", "private_property_identifier"})
_SKIP_STATEMENTS = frozenset({"empty_statement", "break_statement", "continue_statement"})
_CONSTANTS = frozenset(
    {"comment", "string", "number", "true", "false", "null", "undefined", "regex"}
)
"""Leaf expressions whose value only matters where it is a key's or an argument's value."""
_NOT_PLAIN = (b"(", b"++", b"--", b"\\")
_EFFECT_WORDS = frozenset(
    {b"new", b"delete", b"import", b"yield", b"function", b"class", b"topic", b"ids"}
)
_TAG_GLOBALS = frozenset(
    path.split(".")[0] for path in NONDETERMINISTIC_CALLS | OBJECT_WRITERS | PROMISE_COMBINATORS
)
"""Globals whose (tagged-template) calls the walk reports on."""


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


def join(a: Flow, b: Flow) -> Flow:
    """Merge the flow states of two paths."""
    if a is None:
        return b
    if b is None or b is False:
        return a
    if a is False:
        return b
    return a


@dataclass(frozen=True, slots=True, eq=False)
class PromiseMethod(Value):
    """``.then``/``.catch``/``.finally`` of the promise a ctx call returned."""

    call: CapabilityCall
    name: str


@dataclass(eq=False, slots=True)
class _Target:
    label: str | None
    is_loop: bool
    breaks: list[Flow] = field(default_factory=list)
    continues: list[Flow] = field(default_factory=list)


@dataclass(eq=False, slots=True)
class _Frame:
    node: Node
    via: tuple[str, ...]
    site: Node | None
    returns: list[Flow] = field(default_factory=list)
    values: list[Value | None] = field(default_factory=list)
    targets: list[_Target] = field(default_factory=list)


class _Walk:
    def __init__(
        self,
        analysis: Analysis,
        module: Scope,
        handler: Handler,
        kinds: dict[str, dict[str, OperationKind]],
    ) -> None:
        self.kinds = kinds
        self.analysis = analysis
        self.data = analysis.source.data
        self.module = module
        self.handler = handler
        self.is_mutate = handler.phase is HandlerPhase.MUTATE
        self.frames: list[_Frame] = []
        self.active: set[int] = set()
        self.in_loop = False
        self.in_callback = False
        self.in_try = 0
        self.detached = False
        self.replay = False
        self.after_reported = False
        self.try_states: list[list[Flow]] = []
        self.pending_label: str | None = None
        self.created: dict[int, FunctionValue] = {}
        self.walked: set[int] = set()
        self.steps = 0
        self.reported_members: set[int] = set()
        self.limited: set[str] = set()

    # entry points

    def run(self) -> None:
        handler = self.handler.node
        if self.is_inert(handler):
            return
        scope = Scope(parent=self.module)
        self.frames.append(_Frame(handler, (), None))
        self.walked.add(handler.id)
        self.active.add(handler.id)
        self.bind_parameters(handler, [CTX], scope, False)
        self.function_body(handler, scope, False)
        self.active.discard(handler.id)
        self.frames.pop()
        self.detached = True
        self.in_callback = True
        for _ in range(_MAX_ROUNDS):
            pending = self.pending()
            if not pending:
                return
            for function in pending:
                self.invoke(function, [], False, function.node, callback=True)
                self.walked.add(function.node.id)
        pending = self.pending()
        if pending:
            self.limit(pending[0].node, "rounds", _MAX_ROUNDS)

    def pending(self) -> list[FunctionValue]:
        return [f for key, f in self.created.items() if key not in self.walked]

    def limit(self, node: Node, limit: str, bound: int) -> None:
        if limit in self.limited:
            return
        self.limited.add(limit)
        site = self.site(node) if self.frames else node
        via = self.frame.via if self.frames else ()
        self.analysis.limits.append(
            AnalysisLimit(self.handler, node, site, via, limit, bound)  # type: ignore[arg-type]
        )

    def is_inert(self, function: Node) -> bool:
        """True for a function with an empty block body and plain parameters: nothing to find."""
        body = function.child_by_field_id(Field.BODY)
        if body is None or body.type != "statement_block" or body.named_child_count:
            return False
        return all(p.type == "identifier" for p in self.parameters(function))

    def text(self, node: Node) -> str:
        return self.data[node.start_byte : node.end_byte].decode("utf-8", "replace")

    @property
    def frame(self) -> _Frame:
        return self.frames[-1]

    def site(self, node: Node) -> Node:
        return self.frame.site if self.frame.site is not None else node

    @property
    def recording(self) -> bool:
        return not self.replay

    # functions

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
            return None, state
        if len(self.frames) > _MAX_HELPER_DEPTH:
            self.limit(call, "helper-depth", _MAX_HELPER_DEPTH)
            return None, state
        if self.steps > _STEP_BUDGET:
            self.limit(call, "steps", _STEP_BUDGET)
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
        saved = (self.in_callback, self.pending_label, self.after_reported)
        if callback:
            self.in_callback = True
        self.pending_label = None
        self.frames.append(_Frame(node, via, site))
        self.active.add(node.id)
        try:
            entry = self.bind_parameters(node, arguments, scope, state)
            value, end = self.function_body(node, scope, entry)
        finally:
            self.active.discard(node.id)
            self.frames.pop()
            self.in_callback, self.pending_label, self.after_reported = saved
        if callback:
            return None, join(state, end)
        return value, end

    # binding patterns

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
            for child in pattern.named_children:
                state = self.bind(child, None, scope, kind, state)
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

    def key_name(self, key: Node) -> str | None:
        kind = key.type
        if kind in ("property_identifier", "number"):
            return self.text(key)
        if kind == "string":
            return string_literal(key, self.data)
        if kind == "computed_property_name" and key.named_child_count == 1:
            return string_literal(key.named_children[0], self.data)
        return None

    # values

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
        if isinstance(value, CallResult) and name in ("then", "catch", "finally"):
            return PromiseMethod(value.call, name)
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

    # facts

    def dynamic(self, node: Node, reason: str, what: str) -> None:
        self.analysis.dynamic.append(
            DynamicCapability(self.handler, node, reason, what)  # type: ignore[arg-type]
        )

    def shared(self, node: Node, name: str, access: str, binding: Binding | None = None) -> None:
        if not self.recording:
            return
        self.analysis.shared_state.append(
            SharedStateAccess(
                self.handler,
                node,
                name,
                access,  # type: ignore[arg-type]
                binding.kind if binding is not None else None,
            )
        )

    # statements

    def block(self, block: Node, scope: Scope, state: Flow) -> Flow:
        statements = [c for c in block.named_children if c.type != "comment"]
        for statement in statements:
            if statement.type in ("function_declaration", "generator_function_declaration"):
                declare_statement(statement, scope, self.data, module=False)
        reported_here = False
        for statement in statements:
            if state is None:
                break
            state = self.statement(statement, scope, state, reported_here)
            if self.try_states:
                self.try_states[-1].append(state)
            reported_here = reported_here or self.last_reported
        return state

    last_reported = False

    def statement(self, node: Node, scope: Scope, state: Flow, quiet: bool = False) -> Flow:
        self.steps += 1
        kind = node.type
        self.last_reported = False
        flagged = False
        if (
            isinstance(state, CapabilityCall)
            and self.is_mutate
            and not quiet
            and not self.after_reported
            and not self.detached
            and self.recording
            and self.runs_code(node)
        ):
            at = self.frame.site if self.frame.site is not None else node
            self.analysis.code_after_mutation.append(CodeAfterMutation(self.handler, at, state))
            flagged = True
        handler = _STATEMENTS.get(kind)
        saved = self.after_reported
        if flagged or quiet:
            self.after_reported = True
        try:
            if handler is not None:
                return handler(self, node, scope, state)
            if kind in ("function_declaration", "generator_function_declaration"):
                return state
            if kind == "class_declaration":
                declare_statement(node, scope, self.data, module=False)
                return state
            for child in node.named_children:
                if child.type.endswith("statement") or child.type == "statement_block":
                    state = self.statement(child, scope, state)
                else:
                    _, state = self.expr(child, scope, state)
            return state
        finally:
            self.after_reported = saved
            self.last_reported = flagged

    def runs_code(self, node: Node) -> bool:
        kind = node.type
        if kind in _SKIP_STATEMENTS or kind in (
            "function_declaration",
            "generator_function_declaration",
        ):
            return False
        if kind == "return_statement":
            argument = [c for c in node.named_children if c.type != "comment"]
            return bool(argument) and argument[0].type != "undefined"
        return True

    def expression_statement(self, node: Node, scope: Scope, state: Flow) -> Flow:
        for child in node.named_children:
            _, state = self.expr(child, scope, state)
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

    def block_statement(self, node: Node, scope: Scope, state: Flow) -> Flow:
        label, self.pending_label = self.pending_label, None
        if label is None:
            return self.block(node, Scope(parent=scope), state)
        target = _Target(label, is_loop=False)
        self.frame.targets.append(target)
        try:
            end = self.block(node, Scope(parent=scope), state)
        finally:
            self.frame.targets.pop()
        for broken in target.breaks:
            end = join(end, broken)
        return end

    def if_statement(self, node: Node, scope: Scope, state: Flow) -> Flow:
        condition = node.child_by_field_id(Field.CONDITION)
        if condition is not None:
            start, end = condition.start_byte, condition.end_byte
            if condition.type == "parenthesized_expression":
                start, end = start + 1, end - 1
            if not self.is_plain_text(start, end, scope):
                _, state = self.expr(condition, scope, state)
        consequence = node.child_by_field_id(Field.CONSEQUENCE)
        then_state = self.statement(consequence, scope, state) if consequence else state
        alternative = node.child_by_field_id(Field.ALTERNATIVE)
        if alternative is None:
            return join(then_state, state)
        else_state = state
        for child in alternative.named_children:
            if child.type != "comment":
                else_state = self.statement(child, scope, else_state)
        return join(then_state, else_state)

    def switch_statement(self, node: Node, scope: Scope, state: Flow) -> Flow:
        value = node.child_by_field_id(Field.VALUE)
        if value is not None:
            _, state = self.expr(value, scope, state)
        label, self.pending_label = self.pending_label, None
        target = _Target(label, is_loop=False)
        self.frame.targets.append(target)
        inner = Scope(parent=scope)
        falling: Flow = None
        has_default = False
        body = node.child_by_field_id(Field.BODY)
        try:
            for case in body.named_children if body is not None else []:
                if case.type == "switch_default":
                    has_default = True
                elif case.type == "switch_case":
                    test = case.child_by_field_id(Field.VALUE)
                    if test is not None:
                        _, state = self.expr(test, scope, state)
                else:
                    continue
                falling = join(state, falling)
                reported = False
                for statement in case.children_by_field_name("body"):
                    if falling is None:
                        break
                    falling = self.statement(statement, inner, falling, reported)
                    reported = reported or self.last_reported
        finally:
            self.frame.targets.pop()
        end = falling
        for broken in target.breaks:
            end = join(end, broken)
        if not has_default:
            end = join(end, state)
        return end

    def loop(
        self,
        node: Node,
        scope: Scope,
        state: Flow,
        *,
        body: Node | None,
        test: Node | None = None,
        update: Node | None = None,
        binding: tuple[Node, str] | None = None,
        at_least_once: bool = False,
    ) -> Flow:
        label, self.pending_label = self.pending_label, None
        entry = state

        def one_pass(start: Flow) -> tuple[Flow, Flow, _Target]:
            target = _Target(label, is_loop=True)
            self.frame.targets.append(target)
            inner = Scope(parent=scope)
            saved = self.in_loop
            self.in_loop = True
            try:
                current = start
                if test is not None and not at_least_once:
                    _, current = self.expr(test, inner, current)
                exit_on_test = current
                if binding is not None:
                    pattern, kind = binding
                    current = self.bind(pattern, None, inner, kind, current)
                if body is not None and current is not None:
                    current = self.statement(body, inner, current)
                for continued in target.continues:
                    current = join(current, continued)
                if at_least_once and test is not None and current is not None:
                    _, current = self.expr(test, inner, current)
                    exit_on_test = current
                if update is not None and current is not None:
                    _, current = self.expr(update, inner, current)
            finally:
                self.in_loop = saved
                self.frame.targets.pop()
            return current, exit_on_test, target

        back, exit_on_test, target = one_pass(entry)
        breaks = list(target.breaks)
        if isinstance(back, CapabilityCall) and not self.replay and back is not entry:
            self.replay = True
            try:
                back_again, exit_again, target_again = one_pass(join(entry, back))
            finally:
                self.replay = False
            breaks.extend(target_again.breaks)
            back = join(back, back_again)
            exit_on_test = join(exit_on_test, exit_again)
        end = join(exit_on_test, back) if not at_least_once else back
        if test is None and not at_least_once and binding is None:
            end = None
        if binding is not None:
            end = join(end, entry)
        for broken in breaks:
            end = join(end, broken)
        return end

    def for_statement(self, node: Node, scope: Scope, state: Flow) -> Flow:
        inner = Scope(parent=scope)
        initializer = node.child_by_field_id(Field.INITIALIZER)
        if initializer is not None:
            state = self.statement(initializer, inner, state, quiet=True)
        condition = node.child_by_field_id(Field.CONDITION)
        if condition is not None and condition.type == "empty_statement":
            condition = None
        if condition is not None and condition.type == "expression_statement":
            condition = condition.named_children[0] if condition.named_child_count else None
        return self.loop(
            node,
            inner,
            state,
            body=node.child_by_field_id(Field.BODY),
            test=condition,
            update=node.child_by_field_id(Field.INCREMENT),
        )

    def for_in_statement(self, node: Node, scope: Scope, state: Flow) -> Flow:
        right = node.child_by_field_id(Field.RIGHT)
        if right is not None:
            _, state = self.expr(right, scope, state)
        left = node.child_by_field_id(Field.LEFT)
        kind_node = node.child_by_field_id(Field.KIND)
        binding = None
        if left is not None:
            if kind_node is not None:
                binding = (left, self.text(kind_node))
            else:
                self.write_target(left, None, scope, state)
        loop_state = self.loop(
            node, scope, state, body=node.child_by_field_id(Field.BODY), binding=binding
        )
        return join(loop_state, state)

    def while_statement(self, node: Node, scope: Scope, state: Flow) -> Flow:
        return self.loop(
            node,
            scope,
            state,
            body=node.child_by_field_id(Field.BODY),
            test=node.child_by_field_id(Field.CONDITION),
        )

    def do_statement(self, node: Node, scope: Scope, state: Flow) -> Flow:
        return self.loop(
            node,
            scope,
            state,
            body=node.child_by_field_id(Field.BODY),
            test=node.child_by_field_id(Field.CONDITION),
            at_least_once=True,
        )

    def try_statement(self, node: Node, scope: Scope, state: Flow) -> Flow:
        body = node.child_by_field_id(Field.BODY)
        catch = node.child_by_field_id(Field.HANDLER)
        finalizer = node.child_by_field_id(Field.FINALIZER)
        self.in_try += 1
        self.try_states.append([])
        try:
            body_end = self.block(body, Scope(parent=scope), state) if body else state
        finally:
            seen = self.try_states.pop()
        try:
            catch_entry = join(state, body_end)
            for inside in seen:
                catch_entry = join(catch_entry, inside)
            after = body_end
            if catch is not None:
                catch_scope = Scope(parent=scope)
                parameter = catch.child_by_field_id(Field.PARAMETER)
                if parameter is not None:
                    self.bind(parameter, None, catch_scope, "catch", catch_entry)
                catch_body = catch.child_by_field_id(Field.BODY)
                catch_end = (
                    self.block(catch_body, catch_scope, catch_entry) if catch_body else catch_entry
                )
                after = join(after, catch_end)
            if finalizer is not None:
                final_body = finalizer.child_by_field_id(Field.BODY)
                final_entry = join(after, catch_entry)
                final_end = (
                    self.block(final_body, Scope(parent=scope), final_entry)
                    if final_body
                    else final_entry
                )
                after = None if after is None or final_end is None else join(after, final_end)
        finally:
            self.in_try -= 1
        return after

    def return_statement(self, node: Node, scope: Scope, state: Flow) -> Flow:
        value: Value | None = None
        for child in node.named_children:
            if child.type != "comment":
                value, state = self.expr(child, scope, state)
        self.frame.returns.append(state)
        self.frame.values.append(value)
        return None

    def throw_statement(self, node: Node, scope: Scope, state: Flow) -> Flow:
        for child in node.named_children:
            _, state = self.expr(child, scope, state)
        return None

    def find_target(self, node: Node, *, loop_only: bool) -> _Target | None:
        label_node = node.child_by_field_id(Field.LABEL)
        label = self.text(label_node) if label_node is not None else None
        for target in reversed(self.frame.targets):
            if label is not None and target.label != label:
                continue
            if loop_only and not target.is_loop:
                continue
            if label is None and not target.is_loop and target.label is not None:
                continue
            return target
        return None

    def break_statement(self, node: Node, scope: Scope, state: Flow) -> Flow:
        target = self.find_target(node, loop_only=False)
        if target is not None:
            target.breaks.append(state)
        return None

    def continue_statement(self, node: Node, scope: Scope, state: Flow) -> Flow:
        target = self.find_target(node, loop_only=True)
        if target is not None:
            target.continues.append(state)
        return None

    def labeled_statement(self, node: Node, scope: Scope, state: Flow) -> Flow:
        label = node.child_by_field_id(Field.LABEL)
        body = node.child_by_field_id(Field.BODY)
        if body is None:
            return state
        self.pending_label = self.text(label) if label is not None else None
        if body.type in (
            "for_statement",
            "for_in_statement",
            "while_statement",
            "do_statement",
            "switch_statement",
            "statement_block",
        ):
            return self.statement(body, scope, state, quiet=True)
        self.pending_label = None
        return self.statement(body, scope, state, quiet=True)

    def with_statement(self, node: Node, scope: Scope, state: Flow) -> Flow:
        obj = node.child_by_field_id(Field.OBJECT)
        if obj is not None:
            _, state = self.expr(obj, scope, state)
        body = node.child_by_field_id(Field.BODY)
        return self.statement(body, scope, state, quiet=True) if body is not None else state

    # expressions

    def expr(self, node: Node, scope: Scope, state: Flow) -> tuple[Value | None, Flow]:
        self.steps += 1
        handler = _EXPRESSIONS.get(node.type)
        if handler is not None:
            return handler(self, node, scope, state)
        value: Value | None = None
        for child in node.named_children:
            value, state = self.expr(child, scope, state)
        return value, state

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
        constant = True
        for child in node.named_children:
            if child.type == "template_substitution":
                constant = False
                for inner in child.named_children:
                    _, state = self.expr(inner, scope, state)
        if constant:
            text = string_literal(node, self.data)
            return (StringValue(text) if text is not None else None), state
        return None, state

    def identifier(self, node: Node, scope: Scope, state: Flow) -> tuple[Value | None, Flow]:
        name = self.data[node.start_byte : node.end_byte].decode("utf-8", "replace")
        binding = scope.lookup(name)
        if binding is None:
            return GlobalRef(name), state
        if binding.module and self.is_state_binding(binding):
            self.shared(node, name, "read", binding)
        return binding.value, state

    def is_state_binding(self, binding: Binding) -> bool:
        if binding.kind in ("let", "var"):
            return True
        if binding.kind != "const" or binding.init is None:
            return False
        return binding.init.type not in FUNCTION_TYPES and not isinstance(
            binding.value, StringValue
        )

    def function_literal(self, node: Node, scope: Scope, state: Flow) -> tuple[Value | None, Flow]:
        function = FunctionValue(node, scope)
        if node.id not in self.walked:
            self.created.setdefault(node.id, function)
        return function, state

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
        for word in set(words(text)):
            if word in _EFFECT_WORDS:
                return False
            name = word.decode()
            binding = scope.lookup(name)
            if binding is None:
                if template and name in _TAG_GLOBALS:
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
        _, state = self.expr(argument, scope, state)
        return None, state

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
        if binding.module and binding.kind not in ("function", "class", "import"):
            self.shared(at, name, "mutate", binding)

    # calls

    def arguments(self, node: Node) -> list[Node]:
        last = node.named_child(node.named_child_count - 1) if node.named_child_count else None
        arguments = last if last is not None and last.type == "arguments" else None
        if arguments is None:
            arguments = node.child_by_field_id(Field.ARGUMENTS)
        if arguments is None or arguments.type != "arguments":
            return []
        return [a for a in arguments.named_children if a.type != "comment"]

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
        if callee.type == "import":
            for argument in argument_nodes:
                _, state = self.expr(argument, scope, state)
            return None, state
        callee_value, state = self.expr(callee, scope, state)
        if isinstance(callee_value, PromiseMethod):
            return self.promise_continuation(callee_value, argument_nodes, scope, state, node)
        if isinstance(callee_value, FunctionValue):
            values: list[Value | None] = []
            for argument in argument_nodes:
                value, state = self.expr(argument, scope, state)
                values.append(value)
            return self.invoke(callee_value, values, state, node)
        values = []
        callbacks: list[FunctionValue] = []
        escaping: list[tuple[Node, Value | None]] = []
        for argument in argument_nodes:
            value, state = self.expr(argument, scope, state)
            values.append(value)
            if isinstance(value, FunctionValue) and argument.type in FUNCTION_TYPES:
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
        self.method_call_on_module_object(callee, scope)
        if escaping and self.recording and not self.is_console(callee_value):
            for argument, value in escaping:
                self.dynamic(argument, "escapes", self.describe(value))
        for callback in callbacks:
            _, state = self.invoke(callback, [], state, node, callback=True)
        return None, state

    def is_console(self, value: Value | None) -> bool:
        return isinstance(value, GlobalRef) and value.path.startswith("console.")

    def global_call(self, path: str, node: Node, arguments: list[Node], scope: Scope) -> None:
        if path in NONDETERMINISTIC_CALLS and self.recording:
            self.analysis.globals.append(
                GlobalUse(node, path, GlobalUseKind.NONDETERMINISTIC, self.handler)
            )
        if path in OBJECT_WRITERS and arguments:
            self.mutated_object(arguments[0], scope, node)

    def method_call_on_module_object(self, callee: Node, scope: Scope) -> None:
        if callee.type != "member_expression":
            return
        prop = callee.child_by_field_id(Field.PROPERTY)
        obj = callee.child_by_field_id(Field.OBJECT)
        if prop is None or obj is None or self.text(prop) not in MUTATING_METHODS:
            return
        self.mutated_object(obj, scope, callee)

    def new_expression(self, node: Node, scope: Scope, state: Flow) -> tuple[Value | None, Flow]:
        constructor = node.child_by_field_id(Field.CONSTRUCTOR)
        value: Value | None = None
        if constructor is not None:
            value, state = self.expr(constructor, scope, state)
        argument_nodes = self.arguments(node)
        if (
            isinstance(value, GlobalRef)
            and value.path == "Date"
            and not argument_nodes
            and self.recording
        ):
            self.analysis.globals.append(
                GlobalUse(node, "new Date()", GlobalUseKind.NONDETERMINISTIC, self.handler)
            )
        is_promise = isinstance(value, GlobalRef) and value.path == "Promise"
        for argument in argument_nodes:
            argument_value, state = self.expr(argument, scope, state)
            if isinstance(argument_value, FunctionValue) and argument.type in FUNCTION_TYPES:
                if is_promise:
                    _, state = self.invoke(argument_value, [], state, node)
                else:
                    _, state = self.invoke(argument_value, [], state, node, callback=True)
            elif is_capability(argument_value) and self.recording:
                self.dynamic(argument, "escapes", self.describe(argument_value))
        return None, state

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
                call.is_mutation
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
        return CallResult(call), end

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
                in_try=self.in_try > 0 or (kind is OperationKind.MUTATION and self.caught(node)),
                detached=self.detached,
                after=state if isinstance(state, CapabilityCall) else None,
                result_use=self.result_use(node) if kind is OperationKind.MUTATION else None,
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


_STATEMENTS: dict[str, Callable[[_Walk, Node, Scope, Flow], Flow]] = {
    "expression_statement": _Walk.expression_statement,
    "lexical_declaration": _Walk.declaration,
    "variable_declaration": _Walk.declaration,
    "statement_block": _Walk.block_statement,
    "if_statement": _Walk.if_statement,
    "switch_statement": _Walk.switch_statement,
    "for_statement": _Walk.for_statement,
    "for_in_statement": _Walk.for_in_statement,
    "while_statement": _Walk.while_statement,
    "do_statement": _Walk.do_statement,
    "try_statement": _Walk.try_statement,
    "return_statement": _Walk.return_statement,
    "throw_statement": _Walk.throw_statement,
    "break_statement": _Walk.break_statement,
    "continue_statement": _Walk.continue_statement,
    "labeled_statement": _Walk.labeled_statement,
    "with_statement": _Walk.with_statement,
}
_EXPRESSIONS: dict[str, Callable[[_Walk, Node, Scope, Flow], tuple[Value | None, Flow]]] = {
    "identifier": _Walk.identifier,
    "member_expression": _Walk.member_expression,
    "subscript_expression": _Walk.subscript_expression,
    "call_expression": _Walk.call_expression,
    "new_expression": _Walk.new_expression,
    "await_expression": _Walk.passthrough,
    "parenthesized_expression": _Walk.passthrough,
    "assignment_expression": _Walk.assignment,
    "augmented_assignment_expression": _Walk.assignment,
    "update_expression": _Walk.update_expression,
    "unary_expression": _Walk.unary_expression,
    "binary_expression": _Walk.binary_expression,
    "ternary_expression": _Walk.ternary_expression,
    "object": _Walk.object_literal,
    "array": _Walk.array_literal,
    "string": _Walk.string,
    "template_string": _Walk.template_string,
    "arrow_function": _Walk.function_literal,
    "function_expression": _Walk.function_literal,
    "function": _Walk.function_literal,
    "generator_function": _Walk.function_literal,
    "spread_element": _Walk.spread_element,
    "class": _Walk.nothing,
    "number": _Walk.nothing,
    "regex": _Walk.nothing,
    "true": _Walk.nothing,
    "false": _Walk.nothing,
    "null": _Walk.nothing,
    "undefined": _Walk.nothing,
    "this": _Walk.nothing,
    "super": _Walk.nothing,
    "comment": _Walk.nothing,
}


def walk_handlers(analysis: Analysis, module: Scope) -> None:
    """Walk every handler of `analysis` and append the facts found to it."""
    kinds = {
        connector.name: {op.name: op.kind for op in connector.operations}
        for connector in analysis.connectors.connectors
    }
    for handler in analysis.handlers:
        _Walk(analysis, module, handler, kinds).run()
