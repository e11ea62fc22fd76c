"""``try``/``catch``/``finally``: which flow states reach each part.

Contract: the ``catch`` block is entered with the join of every state seen
inside the ``try`` block (any statement may throw), the ``finally`` block with
every state that leaves ``try`` or ``catch``; calls inside the ``try`` block
are marked `in_try`.
"""

from __future__ import annotations

import tree_sitter

from keep_sdk.validator.fields import Field
from keep_sdk.validator.scope import Scope
from keep_sdk.validator.walk._dispatch import STATEMENTS
from keep_sdk.validator.walk._state import WalkState
from keep_sdk.validator.walk.flow import Flow, join

__all__ = ["Exceptions"]

Node = tree_sitter.Node


class Exceptions(WalkState):
    """The ``try`` statement handler."""

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


STATEMENTS["try_statement"] = Exceptions.try_statement
