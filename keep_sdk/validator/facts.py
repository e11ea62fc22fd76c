"""The facts the analysis collects about a script; rules (built-in and plugins) read them.

Every fact holds the tree-sitter node it is about. A fact found inside a
module-level helper function called from a handler belongs to that handler's
phase; `site` is then the call in the handler's own body that led there and
`via` names the helpers followed.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum
from typing import Literal

import tree_sitter

from keep_sdk.contract.manifest import Manifest
from keep_sdk.contract.phases import MUTATING_KINDS
from keep_sdk.contract.workflow import ConsumerManifest, WorkflowManifest
from keep_sdk.model import HandlerKind, HandlerPhase, HostPolicy, OperationKind
from keep_sdk.validator.source import SourceText

__all__ = [
    "Analysis",
    "AnalysisLimit",
    "CapabilityCall",
    "CodeAfterMutation",
    "DynamicCapability",
    "GlobalUse",
    "GlobalUseKind",
    "Handler",
    "HandlerReturn",
    "ImplicitCode",
    "ImplicitReason",
    "LimitKind",
    "ShapeProblem",
    "SharedStateAccess",
    "SyntaxProblem",
    "TopicUse",
    "UndefinedName",
    "UnknownOperationUse",
]

Node = tree_sitter.Node


@dataclass(frozen=True, slots=True, eq=False)
class Handler:
    """One handler phase of the workflow: a function the sandbox runs on its own."""

    kind: HandlerKind
    name: str
    phase: HandlerPhase
    node: Node
    consumer: ConsumerManifest | None = None
    publishes: tuple[str, ...] | None = None

    @property
    def label(self) -> str:
        """``producers.<name>`` or ``consumers.<name>.<phase>``."""
        if self.kind is HandlerKind.PRODUCER:
            return f"producers.{self.name}"
        return f"consumers.{self.name}.{self.phase.value}"


@dataclass(frozen=True, slots=True, eq=False)
class CapabilityCall:
    """A call through ``ctx``: a connector operation or ``publish``/``peek``/``getByIds``.

    `target` reads as the script wrote it resolved through aliases:
    ``gmail.send`` or ``publish``. `kind` is the operation's kind from the
    connector manifest (None for ctx methods and unknown operations).
    `after` is a mutation that may already have run when this call starts.
    `result_use` is the node that uses the value the call returns, if any.
    `detached` marks calls in functions that are created but never called
    where the analysis could see (their flow facts are not collected).
    `callback_hosts` names, outermost first, the callee each enclosing callback was
    passed to (``map`` for ``items.map(x => ...)``; ``""`` when it has no name).
    """

    handler: Handler
    node: Node
    site: Node
    via: tuple[str, ...]
    target: str
    connector: str | None
    operation: str | None
    method: Literal["publish", "peek", "getByIds"] | None
    kind: OperationKind | None
    arguments: tuple[Node, ...]
    in_loop: bool = False
    in_callback: bool = False
    in_try: bool = False
    detached: bool = False
    callback_hosts: tuple[str, ...] = ()
    after: CapabilityCall | None = None
    result_use: Node | None = None
    topic: str | None = None
    """The topic a ``publish``/``peek`` names when it is a string constant (through a
    helper's parameter too: the value the caller passed)."""

    @property
    def is_mutation(self) -> bool:
        """True for a connector mutation."""
        return self.kind in MUTATING_KINDS


@dataclass(frozen=True, slots=True, eq=False)
class CodeAfterMutation:
    """A statement (or callback) of `mutate` that can run after `mutation` was called."""

    handler: Handler
    node: Node
    mutation: CapabilityCall


@dataclass(frozen=True, slots=True, eq=False)
class DynamicCapability:
    """A use of ``ctx`` (or a connector or operation from it) the analysis cannot follow.

    `reason` is ``computed`` (``ctx[x]``), ``escapes`` (passed to unknown code,
    stored in an object, spread), ``reassigned``, ``rest`` (``...rest`` of ctx)
    or ``returned`` (returned from a getter, a callback or a function no call
    site the walk follows receives the result of).
    """

    handler: Handler
    node: Node
    reason: Literal["computed", "escapes", "reassigned", "rest", "returned"]
    what: str


ImplicitReason = Literal["accessor", "conversion", "symbol", "define", "using", "proxy", "patched"]
"""How an `ImplicitCode` construct runs code without a call in the source."""


@dataclass(frozen=True, slots=True, eq=False)
class ImplicitCode:
    """A construct that makes JavaScript run script code without a call the walk can see.

    `reason` is ``accessor`` (a ``get``/``set`` property), ``conversion`` (a
    ``toJSON``, ``valueOf``, ``toString`` or ``then`` that is code), ``symbol``
    (a ``Symbol.toPrimitive``-like hook), ``define`` (a property defined from a
    descriptor that is not plain data), ``using`` (a disposer: ``using``,
    ``await using``, ``DisposableStack``), ``proxy`` (``Proxy``) or ``patched``
    (a built-in replaced, such as ``Array.prototype.map = ...``). `what` is
    the construct as the script wrote it. Found anywhere in the script;
    `handler` is the handler whose function contains it, if any. `in_place` is True
    when all the code the construct makes JavaScript run is written inside `node` (a
    getter, a method, a function literal as the value, a descriptor literal whose
    ``get``/``set`` are written there), False when it is named elsewhere or unreadable.
    """

    node: Node
    reason: ImplicitReason
    what: str
    handler: Handler | None = None
    in_place: bool = False


@dataclass(frozen=True, slots=True, eq=False)
class SharedStateAccess:
    """A handler touching module-level state: `access` says how.

    ``read``/``write`` of a module-level binding `name`; ``mutate`` of the
    object a module-level binding holds; ``global-write`` to ``globalThis``;
    ``implicit-global`` an assignment to an undeclared name.
    """

    handler: Handler
    node: Node
    name: str
    access: Literal["read", "write", "mutate", "global-write", "implicit-global"]
    declared_as: str | None = None


class GlobalUseKind(StrEnum):
    """Why a global is reported."""

    FORBIDDEN = "forbidden"
    UNAVAILABLE = "unavailable"
    NONDETERMINISTIC = "nondeterministic"


@dataclass(frozen=True, slots=True, eq=False)
class GlobalUse:
    """A use of a global the sandbox forbids or lacks, or of a nondeterministic source.

    `site` and `via` are as on `CapabilityCall` for uses the handler walk reached
    inside helpers: the call in the handler, and the helpers' names (empty in the
    handler's own body or when found by the module scan).
    """

    node: Node
    name: str
    kind: GlobalUseKind
    handler: Handler | None = None
    site: Node | None = None
    via: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True, eq=False)
class TopicUse:
    """A topic named by the script: in a declaration or in a ctx call or reservation.

    `topic` is None when the name is not a constant the analysis can read.
    """

    node: Node
    topic: str | None
    via: Literal["subscribe", "publishes", "publish", "peek", "getByIds", "reservation"]
    handler: Handler | None = None
    owner: str | None = None


@dataclass(frozen=True, slots=True, eq=False)
class ShapeProblem:
    """Something wrong with the shape of the workflow declaration."""

    message_id: str
    node: Node | None
    arguments: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True, slots=True, eq=False)
class UnknownOperationUse:
    """``ctx.<connector>.<operation>`` that the connector manifest does not declare.

    `operation` is None when ``ctx.<connector>`` itself is called.
    `connector_known` tells whether the connector exists (and only the
    operation is wrong).
    """

    handler: Handler
    node: Node
    connector: str
    operation: str | None
    connector_known: bool = False


@dataclass(frozen=True, slots=True, eq=False)
class HandlerReturn:
    """An expression a handler's own body returns (``return x``, or an arrow's body)."""

    handler: Handler
    node: Node


@dataclass(frozen=True, slots=True, eq=False)
class UndefinedName:
    """A read of `name` where no declaration is in scope, though the script declares it elsewhere.

    The sandbox has no global of that name either, so the read is a
    ``ReferenceError`` when it runs (``state`` in ``next``, whose parameters
    are ``ctx, prepared, mutationResult``). A free name the script declares
    nowhere is a `GlobalUse` of kind ``unavailable`` instead. `site` and
    `via` are as for `CapabilityCall`.
    """

    handler: Handler
    node: Node
    site: Node
    via: tuple[str, ...]
    name: str


LimitKind = Literal["helper-depth", "steps", "rounds", "recursion", "nesting"]
"""Which budget of the handler walk an `AnalysisLimit` names."""


@dataclass(frozen=True, slots=True, eq=False)
class AnalysisLimit:
    """A point where the handler walk hit one of its budgets and stopped following the code.

    What lies beyond `node` was not checked, so the script must not pass as
    clean. `limit` names the budget and `bound` its size: ``helper-depth``
    (`node` is a call nested deeper than `bound` functions), ``steps`` (the
    handler's walk took more than `bound` steps; `node` is the first call it
    did not follow), ``rounds`` (functions created but never called are
    nested deeper than `bound`; `node` is the first one not walked),
    ``recursion`` (`node` is a recursive call, walked once only, into a
    function that makes a mutation it could repeat), ``nesting`` (`node` is
    an expression or statement nested more than `bound` levels deep inside the
    handler and the helpers it calls; it and what it contains are not walked).
    `site` and `via` are as
    for `CapabilityCall`.
    """

    handler: Handler
    node: Node
    site: Node
    via: tuple[str, ...]
    limit: LimitKind
    bound: int


@dataclass(frozen=True, slots=True)
class SyntaxProblem:
    """A syntax error: byte range and message.

    `source` says who found it: the tree-sitter ``parser``, the QuickJS
    ``engine``, or ``fence``: a line of Markdown code fence (```` ```js ````)
    pasted with the script, reported instead of the errors it causes.
    """

    start_byte: int
    end_byte: int
    message: str
    source: Literal["parser", "engine", "fence"] = "parser"


@dataclass(eq=False)
class Analysis:
    """Everything known about one script. Rules read it; they never change it.

    When `syntax` is not empty the script could not be read reliably and no
    other fact is collected. `manifest` is None when the workflow's shape
    could not be extracted (see `shape_problems`).
    """

    source: SourceText
    connectors: Manifest
    policy: HostPolicy
    filename: str | None = None
    syntax: list[SyntaxProblem] = field(default_factory=list)
    manifest: WorkflowManifest | None = None
    declared_topics: frozenset[str] | None = None
    handlers: list[Handler] = field(default_factory=list)
    shape_problems: list[ShapeProblem] = field(default_factory=list)
    calls: list[CapabilityCall] = field(default_factory=list)
    code_after_mutation: list[CodeAfterMutation] = field(default_factory=list)
    dynamic: list[DynamicCapability] = field(default_factory=list)
    implicit_code: list[ImplicitCode] = field(default_factory=list)
    shared_state: list[SharedStateAccess] = field(default_factory=list)
    globals: list[GlobalUse] = field(default_factory=list)
    topics: list[TopicUse] = field(default_factory=list)
    unknown_operations: list[UnknownOperationUse] = field(default_factory=list)
    undefined_names: list[UndefinedName] = field(default_factory=list)
    returns: list[HandlerReturn] = field(default_factory=list)
    limits: list[AnalysisLimit] = field(default_factory=list)

    def text(self, node: Node) -> str:
        """The source text of `node`."""
        return self.source.node_text(node)

    def handler_at(self, node: Node) -> Handler | None:
        """The innermost handler whose function contains `node`, if any."""
        best: Handler | None = None
        for handler in self.handlers:
            inside = handler.node.start_byte <= node.start_byte <= node.end_byte
            inside = inside and node.end_byte <= handler.node.end_byte
            if inside and (best is None or handler.node.start_byte >= best.node.start_byte):
                best = handler
        return best
