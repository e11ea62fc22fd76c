"""Walk each handler's code: the driver that assembles the parts in `keep_sdk.validator.walk`.

The walk is an abstract interpretation over the syntax tree. Expressions
evaluate to the few values that matter (ctx, a connector, an operation, a
function the walk can follow, the result of a ctx call, a string constant);
statements carry a flow state (`walk.flow`): unreachable, clean, or the
mutation call that may already have run on some path to this point. Loops
are walked twice so that a mutation reaching the back edge is seen by the
second pass; helper functions are walked at each call with the caller's
values bound to their parameters and the caller's flow state.

Contract of `walk_handlers`: it appends to the `Analysis` the neutral facts
of every handler (calls through ctx, code after a mutation, dynamic uses of
ctx, shared-state accesses, topic uses, unknown operations, uses of the
globals the rules' `WalkVocabulary` names), then walks the functions the
handler creates but never calls (their facts are `detached`). Where a budget
of `walk.limits` stops it, or a recursive call could repeat a mutation, it
records an `AnalysisLimit`, never silence. Should a caller already deep in
its own stack leave the walk too little of Python's recursion limit, the
handler gets a ``nesting`` limit instead of an exception.
"""

from __future__ import annotations

import tree_sitter

from keep_sdk.model import OperationKind
from keep_sdk.validator.facts import Analysis, AnalysisLimit, HandlerReturn
from keep_sdk.validator.fields import Field
from keep_sdk.validator.scope import CTX, FunctionValue, Scope
from keep_sdk.validator.vocabulary import WalkVocabulary
from keep_sdk.validator.walk.bindings import Bindings
from keep_sdk.validator.walk.calls import Calls
from keep_sdk.validator.walk.exceptions import Exceptions
from keep_sdk.validator.walk.expressions import Expressions
from keep_sdk.validator.walk.flow import Frame
from keep_sdk.validator.walk.limits import MAX_NESTING, MAX_ROUNDS, Limits
from keep_sdk.validator.walk.literals import Literals
from keep_sdk.validator.walk.loops import Loops
from keep_sdk.validator.walk.mutations import PROMISE_COMBINATORS, Mutations
from keep_sdk.validator.walk.statements import Statements
from keep_sdk.validator.walk.values import Values
from keep_sdk.validator.walk.writes import Writes

__all__ = ["walk_handlers"]

_NO_VOCABULARY = WalkVocabulary()
_PROMISE_ROOTS = frozenset(path.split(".")[0] for path in PROMISE_COMBINATORS)


class _Walk(
    Statements,
    Loops,
    Exceptions,
    Expressions,
    Literals,
    Writes,
    Calls,
    Mutations,
    Bindings,
    Values,
    Limits,
):
    """One handler's walk."""

    def run(self) -> None:
        handler = self.handler.node
        if self.is_inert(handler):
            return
        scope = Scope(parent=self.module)
        self.frames.append(Frame(handler, (), None))
        self.walked.add(handler.id)
        self.active.add(handler.id)
        self.bind_parameters(handler, [CTX], scope, False)
        body = handler.child_by_field_id(Field.BODY)
        if body is not None and body.type != "statement_block":
            self.analysis.returns.append(HandlerReturn(self.handler, body))
        self.function_body(handler, scope, False)
        self.active.discard(handler.id)
        self.frames.pop()
        self.detached = True
        self.in_callback = True
        for _ in range(MAX_ROUNDS):
            pending = self.pending()
            if not pending:
                return
            for function in pending:
                self.invoke(function, [], False, function.node, callback=True)
                self.walked.add(function.node.id)
        pending = self.pending()
        if pending:
            self.limit(pending[0].node, "rounds", MAX_ROUNDS)

    def pending(self) -> list[FunctionValue]:
        return [f for key, f in self.created.items() if key not in self.walked]

    def is_inert(self, function: tree_sitter.Node) -> bool:
        """True for a function with an empty block body and plain parameters: nothing to find."""
        body = function.child_by_field_id(Field.BODY)
        if body is None or body.type != "statement_block" or body.named_child_count:
            return False
        return all(p.type == "identifier" for p in self.parameters(function))


def walk_handlers(
    analysis: Analysis, module: Scope, vocabulary: WalkVocabulary = _NO_VOCABULARY
) -> None:
    """Walk every handler of `analysis` and append the facts found to it.

    `vocabulary` names the calls the rules want recorded (see `WalkVocabulary`).
    """
    kinds: dict[str, dict[str, OperationKind]] = {
        connector.name: {op.name: op.kind for op in connector.operations}
        for connector in analysis.connectors.connectors
    }
    tag_roots = vocabulary.global_roots | _PROMISE_ROOTS
    for handler in analysis.handlers:
        try:
            _Walk(analysis, module, handler, kinds, vocabulary, tag_roots).run()
        except RecursionError:
            node = handler.node
            analysis.limits.append(AnalysisLimit(handler, node, node, (), "nesting", MAX_NESTING))
