"""Loops: each body is walked once, and again when a mutation reaches its back edge.

Contract: the second pass starts from the join of the entry state and the
back-edge state and records nothing but mutations that follow another (the
walk is `replay`ing), so a mutation that can repeat is seen without
duplicating any other fact. The state after a loop joins the exits through its
test, its ``break`` statements and, for ``for-in``/``for-of``, the entry.
"""

from __future__ import annotations

import tree_sitter

from keep_sdk.validator.facts import CapabilityCall
from keep_sdk.validator.fields import Field
from keep_sdk.validator.scope import Scope
from keep_sdk.validator.walk._dispatch import STATEMENTS
from keep_sdk.validator.walk._state import WalkState
from keep_sdk.validator.walk.flow import Flow, Target, join

__all__ = ["Loops"]

Node = tree_sitter.Node


class Loops(WalkState):
    """The loop statement handlers."""

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

        def one_pass(start: Flow) -> tuple[Flow, Flow, Target]:
            target = Target(label, is_loop=True)
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


STATEMENTS.update(
    {
        "for_statement": Loops.for_statement,
        "for_in_statement": Loops.for_in_statement,
        "while_statement": Loops.while_statement,
        "do_statement": Loops.do_statement,
    }
)
