"""Statements: sequencing, branches and jumps, carrying the flow state from one to the next.

Contract: each statement handler takes the flow state before the statement
and returns the state after it (None when no path reaches the end). In
`mutate`, the first statement of each path that runs code after a mutation is
recorded as `CodeAfterMutation`. ``return``, ``break`` and ``continue`` hand
their state to the frame or target they leave to.
"""

from __future__ import annotations

import tree_sitter

from keep_sdk.validator.facts import CapabilityCall, CodeAfterMutation, HandlerReturn
from keep_sdk.validator.fields import Field
from keep_sdk.validator.scope import Scope, Value, declare_statement
from keep_sdk.validator.walk._dispatch import STATEMENTS
from keep_sdk.validator.walk._state import WalkState
from keep_sdk.validator.walk.flow import Flow, Target, join
from keep_sdk.validator.walk.limits import MAX_NESTING

__all__ = ["Statements"]

Node = tree_sitter.Node

_SKIP_STATEMENTS = frozenset({"empty_statement", "break_statement", "continue_statement"})


class Statements(WalkState):
    """The statement handlers."""

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

    def statement(self, node: Node, scope: Scope, state: Flow, quiet: bool = False) -> Flow:
        self.steps += 1
        if self.depth >= MAX_NESTING:
            self.limit(node, "nesting", MAX_NESTING)
            return state
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
        handler = STATEMENTS.get(kind)
        saved = self.after_reported
        if flagged or quiet:
            self.after_reported = True
        self.depth += 1
        try:
            if handler is not None:
                return handler(self, node, scope, state)
            if kind in ("function_declaration", "generator_function_declaration"):
                return state
            if kind == "class_declaration":
                declare_statement(node, scope, self.data, module=False)
                self.class_methods(node, scope)
                return state
            for child in node.named_children:
                if child.type.endswith("statement") or child.type == "statement_block":
                    state = self.statement(child, scope, state)
                else:
                    _, state = self.expr(child, scope, state)
            return state
        finally:
            self.depth -= 1
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

    def block_statement(self, node: Node, scope: Scope, state: Flow) -> Flow:
        label, self.pending_label = self.pending_label, None
        if label is None:
            return self.block(node, Scope(parent=scope), state)
        target = Target(label, is_loop=False)
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
        target = Target(label, is_loop=False)
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

    def return_statement(self, node: Node, scope: Scope, state: Flow) -> Flow:
        value: Value | None = None
        for child in node.named_children:
            if child.type != "comment":
                if len(self.frames) == 1 and self.recording:
                    self.analysis.returns.append(HandlerReturn(self.handler, child))
                value, state = self.expr(child, scope, state)
        self.frame.returns.append(state)
        self.frame.values.append(value)
        return None

    def throw_statement(self, node: Node, scope: Scope, state: Flow) -> Flow:
        for child in node.named_children:
            _, state = self.expr(child, scope, state)
        return None

    def find_target(self, node: Node, *, loop_only: bool) -> Target | None:
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


STATEMENTS.update(
    {
        "expression_statement": Statements.expression_statement,
        "statement_block": Statements.block_statement,
        "if_statement": Statements.if_statement,
        "switch_statement": Statements.switch_statement,
        "return_statement": Statements.return_statement,
        "throw_statement": Statements.throw_statement,
        "break_statement": Statements.break_statement,
        "continue_statement": Statements.continue_statement,
        "labeled_statement": Statements.labeled_statement,
        "with_statement": Statements.with_statement,
    }
)
