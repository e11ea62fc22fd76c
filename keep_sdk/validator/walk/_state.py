"""What one handler's walk knows, and the methods its parts provide to each other.

`WalkState` holds the handler being walked, the facts it records into the
`Analysis`, the stack of function frames, and the flags that qualify facts
(in a loop, in a callback, in ``try``, detached, replaying a loop). The
methods at its end are the contract between the parts of the walk: each is
implemented by the module named in its docstring, and `walker._Walk`
combines them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import tree_sitter

from keep_sdk.model import HandlerPhase, OperationKind
from keep_sdk.validator.facts import (
    Analysis,
    DynamicCapability,
    Handler,
    LimitKind,
    SharedStateAccess,
)
from keep_sdk.validator.scope import (
    Binding,
    CtxMethodValue,
    FunctionValue,
    OperationValue,
    Scope,
    Value,
)
from keep_sdk.validator.vocabulary import WalkVocabulary
from keep_sdk.validator.walk.flow import Flow, Frame

if TYPE_CHECKING:
    from keep_sdk.validator.walk.values import PromiseMethod

__all__ = ["WalkState"]

Node = tree_sitter.Node


class WalkState:
    """The state of one handler's walk and the facts it records (see module doc)."""

    def __init__(
        self,
        analysis: Analysis,
        module: Scope,
        handler: Handler,
        kinds: dict[str, dict[str, OperationKind]],
        vocabulary: WalkVocabulary,
        tag_roots: frozenset[str],
    ) -> None:
        self.kinds = kinds
        self.vocabulary = vocabulary
        self.tag_roots = tag_roots
        self.analysis = analysis
        self.data = analysis.source.data
        self.module = module
        self.handler = handler
        self.is_mutate = handler.phase is HandlerPhase.MUTATE
        self.frames: list[Frame] = []
        self.active: set[int] = set()
        self.in_loop = False
        self.in_callback = False
        self.callback_hosts: tuple[str, ...] = ()
        self.callback_host = ""
        self.in_try = 0
        self.detached = False
        self.replay = False
        self.after_reported = False
        self.last_reported = False
        self.try_states: list[list[Flow]] = []
        self.pending_label: str | None = None
        self.created: dict[int, FunctionValue] = {}
        self.walked: set[int] = set()
        self.steps = 0
        self.depth = 0
        self.reported_members: set[int] = set()
        self.limited: set[str] = set()
        self.mutations = 0
        self.recursive_calls: dict[int, Node] = {}
        self.this_value: Value | None = None
        self.closures: dict[int, Value | None] = {}

    def text(self, node: Node) -> str:
        return self.data[node.start_byte : node.end_byte].decode("utf-8", "replace")

    @property
    def frame(self) -> Frame:
        return self.frames[-1]

    def site(self, node: Node) -> Node:
        return self.frame.site if self.frame.site is not None else node

    @property
    def recording(self) -> bool:
        return not self.replay

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

    def expr(self, node: Node, scope: Scope, state: Flow) -> tuple[Value | None, Flow]:
        """The value of expression `node` and the state after it (`expressions`)."""
        raise NotImplementedError

    def identifier(self, node: Node, scope: Scope, state: Flow) -> tuple[Value | None, Flow]:
        """The value a name holds (`expressions`)."""
        raise NotImplementedError

    def passthrough(self, node: Node, scope: Scope, state: Flow) -> tuple[Value | None, Flow]:
        """The value of a wrapper's single child (`expressions`)."""
        raise NotImplementedError

    def free_name(self, node: Node, name: str) -> None:
        """Record a read of a name no scope declares (`expressions`)."""
        raise NotImplementedError

    def spread_element(self, node: Node, scope: Scope, state: Flow) -> tuple[Value | None, Flow]:
        """Walk ``...x`` (`expressions`)."""
        raise NotImplementedError

    def function_literal(self, node: Node, scope: Scope, state: Flow) -> tuple[Value | None, Flow]:
        """The function a literal creates (`expressions`)."""
        raise NotImplementedError

    def class_methods(self, node: Node, scope: Scope) -> None:
        """Record a class's methods as functions created here (`expressions`)."""
        raise NotImplementedError

    def statement(self, node: Node, scope: Scope, state: Flow, quiet: bool = False) -> Flow:
        """The state after statement `node` (`statements`)."""
        raise NotImplementedError

    def block(self, block: Node, scope: Scope, state: Flow) -> Flow:
        """The state after the statements of `block` (`statements`)."""
        raise NotImplementedError

    def parameters(self, function: Node) -> list[Node]:
        """The parameter patterns of `function` (`bindings`)."""
        raise NotImplementedError

    def bind(
        self, pattern: Node, value: Value | None, scope: Scope, kind: str, state: Flow
    ) -> Flow:
        """Declare the names of `pattern` holding parts of `value` (`bindings`)."""
        raise NotImplementedError

    def bind_parameters(
        self, function: Node, values: list[Value | None], scope: Scope, state: Flow
    ) -> Flow:
        """Bind the arguments `values` to the parameters of `function` (`bindings`)."""
        raise NotImplementedError

    def key_name(self, key: Node) -> str | None:
        """The constant name of a property key, if it has one (`values`)."""
        raise NotImplementedError

    def describe(self, value: Value | None) -> str:
        """How messages name a capability value: ``ctx.gmail.send`` (`values`)."""
        raise NotImplementedError

    def member(self, value: Value | None, name: str, node: Node) -> Value | None:
        """The value of ``value.<name>`` (`values`)."""
        raise NotImplementedError

    def check_operation(self, connector: str, operation: str | None, node: Node) -> None:
        """Record ``ctx.<connector>.<operation>`` if the manifest lacks it (`values`)."""
        raise NotImplementedError

    def operation_kind(self, connector: str, operation: str) -> OperationKind | None:
        """The manifest's kind of an operation (`values`)."""
        raise NotImplementedError

    def is_plain_text(self, start: int, end: int, scope: Scope) -> bool:
        """True when the expression at `start:end` can find nothing (`literals`)."""
        raise NotImplementedError

    def module_closure(self, binding: Binding) -> Value | None:
        """What a module-level binding initialized by an IIFE holds (`values`)."""
        raise NotImplementedError

    def is_state_binding(self, binding: Binding) -> bool:
        """True for a module-level binding holding mutable state (`writes`)."""
        raise NotImplementedError

    def write_target(self, target: Node, value: Value | None, scope: Scope, state: Flow) -> None:
        """Record a write of `value` to `target` (`writes`)."""
        raise NotImplementedError

    def mutated_object(self, obj: Node, scope: Scope, at: Node) -> None:
        """Record a change to the object `obj` holds (`writes`)."""
        raise NotImplementedError

    def method_call_on_module_object(
        self, callee: Node, scope: Scope, value: Value | None = None
    ) -> None:
        """Record a call of a writing method on a module-level object (`writes`).

        `value` is the callee's value (a `ModuleState` for ``alias.push``)."""
        raise NotImplementedError

    def arguments(self, node: Node) -> list[Node]:
        """The argument nodes of a call or ``new`` (`calls`)."""
        raise NotImplementedError

    def invoke(
        self,
        function: FunctionValue,
        arguments: list[Value | None],
        state: Flow,
        call: Node,
        *,
        callback: bool = False,
    ) -> tuple[Value | None, Flow]:
        """Walk `function` called at `call`: its return value and the state after (`calls`)."""
        raise NotImplementedError

    def capability_call(
        self,
        node: Node,
        callee: OperationValue | CtxMethodValue,
        arguments: list[Node],
        values: list[Value | None],
        state: Flow,
    ) -> tuple[Value | None, Flow]:
        """Record a call through ctx and the state after it (`mutations`)."""
        raise NotImplementedError

    def promise_continuation(
        self,
        method: PromiseMethod,
        arguments: list[Node],
        scope: Scope,
        state: Flow,
        node: Node,
    ) -> tuple[Value | None, Flow]:
        """Walk ``.then``/``.catch``/``.finally`` callbacks of a ctx call (`mutations`)."""
        raise NotImplementedError

    def result_use(self, node: Node) -> Node | None:
        """The node that uses the value of the call `node`, if any (`mutations`)."""
        raise NotImplementedError

    def limit(self, node: Node, limit: LimitKind, bound: int) -> None:
        """Record that the walk stopped at `node` on budget `limit` (`limits`)."""
        raise NotImplementedError
