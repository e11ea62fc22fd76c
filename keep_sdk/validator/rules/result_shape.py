"""result-shape: a script reads a field that the value a ctx call returns does not have.

What it does: follows what ``await ctx.<connector>.<operation>(...)``, ``ctx.peek``
and ``ctx.getByIds`` resolve to through ``const`` (and never reassigned ``let``)
bindings, destructuring, ``for ... of``, ``[0]``, ``at``, ``find``, ``filter``,
``slice``, and the item parameter of ``map``/``filter``/``forEach``/``find``/...
callbacks, and checks each property read against the result schema the connector
manifest declares. It reports a read of a field that a closed object (one whose
schema forbids other fields: events, sheet rows) does not declare (``e.id`` on an
event, which carries ``messageId``), and a read of a field that is not an array's
own on an array result when the script uses what it reads as data (iterates it,
reads from it, calls it, or defaults it with ``||``/``??``): ``list.messages || []``
where ``ctx.gmail.search`` returns the array of messages itself. It stays silent
where it is unsure: an open schema, an undeclared result, a name declared twice
in the handler, a value that leaves the handler, a property the handler writes or
deletes anywhere (or adds with ``Object.assign``). A helper's value is followed when
its only ``return`` is the ctx call; ``mutationResult.result`` in ``next`` when the
consumer's ``mutate`` calls one mutation only. A mutation's value in ``mutate`` is never its
result (``mutation-result-used`` reports any use of it).

Why is this bad? The read is always ``undefined``: the script validates, runs and
silently processes nothing (``(list.messages || []).length`` is 0 for every
mailbox), or reserves and publishes ``undefined`` ids.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

import tree_sitter

from keep_sdk.contract.manifest import Manifest
from keep_sdk.contract.results import TOPIC_RESULTS
from keep_sdk.model import HandlerPhase
from keep_sdk.validator._diagnostics import Severity
from keep_sdk.validator.facts import Analysis, CapabilityCall, Handler
from keep_sdk.validator.fields import Field
from keep_sdk.validator.rule import Finding, Rule, RuleMeta
from keep_sdk.validator.rules._support import suggestion, why

__all__ = ["rule"]

Node = tree_sitter.Node
Schema = Mapping[str, Any]

META = RuleMeta(
    id="result-shape",
    severity=Severity.ERROR,
    description="A script reads a field that the value a ctx call returns does not have.",
    rationale=why(__doc__),
    messages={
        "array": (
            "`{expression}` reads `{property}` of the array {what} returns: an array has no "
            "`{property}`, so this is always undefined"
        ),
        "field": (
            "`{expression}` reads `{property}`, which {what} does not have: it is always "
            "undefined{suggestion}"
        ),
    },
    hint="{fields}",
)

_PARENS = ("parenthesized_expression", "await_expression")
_SAME_ARRAY = frozenset(
    {"filter", "slice", "toSorted", "toReversed", "sort", "reverse", "concat", "toSpliced"}
)
_ONE_ITEM = frozenset({"find", "findLast", "at", "pop", "shift"})
_ITEM_CALLBACK = frozenset(
    {"map", "filter", "forEach", "find", "findLast", "findIndex", "findLastIndex"}
    | {"some", "every", "flatMap", "toSorted", "sort"}
)
_ARRAY_MEMBERS = frozenset(
    [
        "length",
        "at",
        "concat",
        "copyWithin",
        "entries",
        "every",
        "fill",
        "filter",
        "find",
        "findIndex",
        "findLast",
        "findLastIndex",
        "flat",
        "flatMap",
        "forEach",
        "includes",
        "indexOf",
        "join",
        "keys",
        "lastIndexOf",
        "map",
        "pop",
        "push",
        "reduce",
        "reduceRight",
        "reverse",
        "shift",
        "slice",
        "some",
        "sort",
        "splice",
        "toLocaleString",
        "toReversed",
        "toSorted",
        "toSpliced",
        "toString",
        "unshift",
        "values",
        "with",
        "constructor",
        "hasOwnProperty",
        "isPrototypeOf",
        "propertyIsEnumerable",
        "valueOf",
        "__proto__",
        "__defineGetter__",
        "__defineSetter__",
        "__lookupGetter__",
        "__lookupSetter__",
    ]
)
_OBJECT_MEMBERS = frozenset(
    [
        "constructor",
        "hasOwnProperty",
        "isPrototypeOf",
        "propertyIsEnumerable",
        "toLocaleString",
        "toString",
        "valueOf",
        "__proto__",
        "__defineGetter__",
        "__defineSetter__",
        "__lookupGetter__",
        "__lookupSetter__",
    ]
)
_DECLARED_BY = {
    "variable_declarator": Field.NAME,
    "pair_pattern": Field.VALUE,
    "assignment_pattern": Field.LEFT,
    "arrow_function": Field.PARAMETER,
    "function_declaration": Field.NAME,
    "function_expression": Field.NAME,
    "generator_function_declaration": Field.NAME,
    "class_declaration": Field.NAME,
    "catch_clause": Field.PARAMETER,
    "assignment_expression": Field.LEFT,
    "augmented_assignment_expression": Field.LEFT,
    "for_in_statement": Field.LEFT,
}
"""Where an identifier child declares or assigns the name: the parent's field."""
_DECLARING_PARENTS = frozenset(
    {
        "formal_parameters",
        "array_pattern",
        "object_pattern",
        "rest_pattern",
        "update_expression",
        "import_specifier",
        "namespace_import",
        "import_clause",
    }
)
"""Parents whose every identifier child declares or assigns the name."""
_SCOPES = frozenset(
    {
        "statement_block",
        "program",
        "for_statement",
        "for_in_statement",
        "arrow_function",
        "function_expression",
        "function_declaration",
        "method_definition",
        "switch_body",
    }
)


@dataclass(frozen=True)
class _Value:
    """A value whose JSON Schema is known: what it is (for messages) and the schema."""

    schema: Schema
    what: str


def check(analysis: Analysis) -> Iterator[Finding]:
    """Property reads of ctx call results that their declared schemas do not have."""
    if not analysis.calls:
        return
    results = _results(analysis.connectors)
    seen: set[int] = set()
    walk = _Walk(analysis, seen)
    for call in analysis.calls:
        if call.detached or call.is_mutation or len(call.via) > 1:
            continue
        start = call.node if not call.via else call.site
        if start.id in seen or (call.via and not _returns_only(call.node)):
            continue
        value = _call_value(call, results)
        if value is None or not _awaited(start):
            continue
        seen.add(start.id)
        yield from walk.uses(start, value, call.handler)
    for handler in analysis.handlers:
        if handler.phase is HandlerPhase.NEXT:
            yield from _mutation_result(analysis, walk, handler, results)


def _mutation_result(
    analysis: Analysis,
    walk: _Walk,
    handler: Handler,
    results: Mapping[tuple[str, str], Schema],
) -> Iterator[Finding]:
    """Reads of ``mutationResult.result`` in `next` when its consumer's ``mutate`` makes
    one mutation only (one operation, wherever it is called)."""
    targets = {
        (call.connector, call.operation)
        for call in analysis.calls
        if call.is_mutation
        and call.handler.phase is HandlerPhase.MUTATE
        and call.handler.name == handler.name
        and call.handler.kind is handler.kind
    }
    if len(targets) != 1:
        return
    [(connector, operation)] = targets
    schema = results.get((connector or "", operation or ""))
    parameter = _third_parameter(handler.node)
    if schema is None or parameter is None:
        return
    name = analysis.text(parameter)
    index = walk.index(handler.node)
    if index.declared.get(name, 0) != 1:
        return
    value = _Value(schema, f"`{name}.result` (what `ctx.{connector}.{operation}` returned)")
    for reference in index.names.get(name, ()):
        node, parent = _value_parent(reference)
        if parent is None or parent.type != "member_expression":
            continue
        if not _is(parent.child_by_field_id(Field.OBJECT), node):
            continue
        prop = parent.child_by_field_id(Field.PROPERTY)
        if prop is not None and analysis.text(prop) == "result":
            yield from walk.uses(parent, value, handler)


def _third_parameter(function: Node) -> Node | None:
    parameters = function.child_by_field_id(Field.PARAMETERS)
    if parameters is None:
        return None
    named = [child for child in parameters.named_children if child.type != "comment"]
    if len(named) < 3 or named[2].type != "identifier":
        return None
    return named[2]


def _call_value(call: CapabilityCall, results: Mapping[tuple[str, str], Schema]) -> _Value | None:
    if call.method in ("peek", "getByIds"):
        return _Value(TOPIC_RESULTS[call.method], f"`ctx.{call.method}`")
    if call.connector is None or call.operation is None:
        return None
    schema = results.get((call.connector, call.operation))
    return None if schema is None else _Value(schema, f"`ctx.{call.target}`")


def _results(manifest: Manifest) -> dict[tuple[str, str], Schema]:
    return {
        (connector.name, op.name): op.result
        for connector in manifest.connectors
        for op in connector.operations
        if op.result is not None
    }


def _awaited(node: Node) -> bool:
    parent = node.parent
    while parent is not None and parent.type == "parenthesized_expression":
        parent = parent.parent
    return parent is not None and parent.type == "await_expression"


_FUNCTIONS = frozenset(
    {
        "arrow_function",
        "function_expression",
        "function_declaration",
        "method_definition",
        "generator_function",
        "generator_function_declaration",
    }
)


def _returns_only(call: Node) -> bool:
    """Whether `call` is what its function returns, and the function returns nothing else."""
    node, parent = _value_parent(call)
    if parent is None:
        return False
    if parent.type == "arrow_function":
        return _is(parent.child_by_field_id(Field.BODY), node)
    if parent.type != "return_statement":
        return False
    function = parent.parent
    while function is not None and function.type not in _FUNCTIONS:
        function = function.parent
    if function is None:
        return False
    returns = 0
    stack = list(function.children)
    while stack:
        current = stack.pop()
        if current.type in _FUNCTIONS or current.type == "class_body":
            continue
        if current.type == "return_statement":
            returns += 1
        stack.extend(current.children)
    return returns == 1


def _value_parent(node: Node) -> tuple[Node, Node | None]:
    current = node
    parent = node.parent
    while parent is not None and parent.type in _PARENS:
        current = parent
        parent = parent.parent
    return current, parent


def _options(schema: Schema) -> list[Schema] | None:
    """The non-null alternatives `schema` allows, or None when it is not readable."""
    if "$ref" in schema:
        return None
    for combinator in ("anyOf", "oneOf"):
        if combinator in schema:
            found: list[Schema] = []
            for option in schema[combinator]:
                if not isinstance(option, Mapping):
                    return None
                inner = _options(option)
                if inner is None:
                    return None
                found += inner
            return found
    declared = schema.get("type")
    if declared == "null":
        return []
    if declared in ("array", "object"):
        return [schema]
    return None


def _array(schema: Schema) -> Schema | None:
    """The item schema when every non-null alternative of `schema` is an array."""
    options = _options(schema)
    if not options or any(o.get("type") != "array" for o in options) or len(options) != 1:
        return None
    items = options[0].get("items")
    return items if isinstance(items, Mapping) else {}


def _object(schema: Schema) -> tuple[dict[str, Schema], bool] | None:
    """The declared fields of an object `schema` and whether it is closed."""
    options = _options(schema)
    if not options or len(options) != 1 or options[0].get("type") != "object":
        return None
    properties = options[0].get("properties") or {}
    fields = {str(k): v for k, v in properties.items() if isinstance(v, Mapping)}
    return fields, options[0].get("additionalProperties") is False


class _Walk:
    def __init__(self, analysis: Analysis, seen: set[int]) -> None:
        self.analysis = analysis
        self.reported: set[int] = set()
        self.followed = seen
        self.indexes: dict[int, _Index] = {}

    def index(self, function: Node) -> _Index:
        """The names of `function` (walked once per handler)."""
        found = self.indexes.get(function.id)
        if found is None:
            found = self.indexes[function.id] = _index(function, self.analysis.text)
        return found

    def uses(self, node: Node, value: _Value, handler: Handler) -> Iterator[Finding]:
        """Findings about how the value of expression `node` is used."""
        node, parent = _value_parent(node)
        if parent is None:
            return
        kind = parent.type
        if kind == "variable_declarator":
            if _is(parent.child_by_field_id(Field.VALUE), node):
                name = parent.child_by_field_id(Field.NAME)
                if name is not None and _constant(parent):
                    yield from self.bind(name, value, handler)
        elif kind == "member_expression":
            if _is(parent.child_by_field_id(Field.OBJECT), node):
                yield from self.member(parent, value, handler)
        elif kind == "subscript_expression":
            if _is(parent.child_by_field_id(Field.OBJECT), node):
                index = parent.child_by_field_id(Field.INDEX)
                items = _array(value.schema)
                if index is not None and index.type == "number" and items is not None:
                    yield from self.uses(parent, _item(value, items), handler)
        elif kind == "for_in_statement":
            right = parent.child_by_field_id(Field.RIGHT)
            left = parent.child_by_field_id(Field.LEFT)
            items = _array(value.schema)
            is_of = any(child.type == "of" for child in parent.children)
            if (
                is_of
                and _is(right, node)
                and left is not None
                and items is not None
                and _for_of_constant(parent)
            ):
                yield from self.bind(left, _item(value, items), handler)

    def member(self, member: Node, value: _Value, handler: Handler) -> Iterator[Finding]:
        prop = member.child_by_field_id(Field.PROPERTY)
        if prop is None or prop.type != "property_identifier":
            return
        name = self.analysis.text(prop)
        index = self.index(handler.node)
        if index.opaque or name in index.written:
            return
        items = _array(value.schema)
        if items is not None:
            if name in _ARRAY_MEMBERS:
                yield from self.array_method(member, name, value, items, handler)
            elif _used_as_data(member):
                yield from self.report(member, "array", name, value, handler, items)
            return
        shape = _object(value.schema)
        if shape is None:
            return
        fields, closed = shape
        if name in fields:
            yield from self.uses(member, _Value(fields[name], f"`{name}` of {value.what}"), handler)
        elif closed and name not in _OBJECT_MEMBERS:
            yield from self.report(member, "field", name, value, handler, value.schema)

    def array_method(
        self, member: Node, name: str, value: _Value, items: Schema, handler: Handler
    ) -> Iterator[Finding]:
        call = member.parent
        if call is None or call.type != "call_expression":
            return
        if not _is(call.child_by_field_id(Field.FUNCTION), member):
            return
        arguments = call.child_by_field_id(Field.ARGUMENTS)
        if name in _ITEM_CALLBACK and arguments is not None and arguments.named_child_count:
            callback = arguments.named_children[0]
            if callback.type in ("arrow_function", "function_expression"):
                first = _first_parameter(callback)
                if first is not None:
                    yield from self.bind(first, _item(value, items), handler)
        if name in _SAME_ARRAY:
            yield from self.uses(call, value, handler)
        elif name in _ONE_ITEM:
            yield from self.uses(call, _item(value, items), handler)

    def bind(self, target: Node, value: _Value, handler: Handler) -> Iterator[Finding]:
        """Follow a binding of `value` to `target` (a name or a pattern)."""
        if target.type == "identifier":
            yield from self.references(target, value, handler)
        elif target.type == "object_pattern":
            yield from self.object_pattern(target, value, handler)
        elif target.type == "array_pattern":
            items = _array(value.schema)
            if items is None:
                return
            for element in target.named_children:
                if element.type in ("identifier", "object_pattern", "array_pattern"):
                    yield from self.bind(element, _item(value, items), handler)

    def object_pattern(self, pattern: Node, value: _Value, handler: Handler) -> Iterator[Finding]:
        shape = _object(value.schema)
        if shape is None:
            return
        fields, closed = shape
        for entry in pattern.named_children:
            key: Node | None = None
            bound: Node | None = None
            if entry.type == "shorthand_property_identifier_pattern":
                key = bound = entry
            elif entry.type == "pair_pattern":
                key = entry.child_by_field_id(Field.KEY)
                bound = entry.child_by_field_id(Field.VALUE)
            elif entry.type == "object_assignment_pattern":
                continue
            if key is None or key.type not in (
                "property_identifier",
                "shorthand_property_identifier_pattern",
            ):
                continue
            name = self.analysis.text(key)
            if name in fields:
                if bound is not None and bound.type != "shorthand_property_identifier_pattern":
                    sub = _Value(fields[name], f"`{name}` of {value.what}")
                    yield from self.bind(bound, sub, handler)
            elif closed and name not in _OBJECT_MEMBERS:
                yield from self.report(key, "field", name, value, handler, value.schema)

    def references(self, name: Node, value: _Value, handler: Handler) -> Iterator[Finding]:
        text = self.analysis.text(name)
        scope = _scope_of(name)
        index = self.index(handler.node)
        if scope is None or index.declared.get(text, 0) != 1:
            return
        for reference in index.names.get(text, ()):
            if reference.start_byte < scope.start_byte or reference.end_byte > scope.end_byte:
                continue
            if reference.id == name.id or reference.id in self.followed:
                continue
            self.followed.add(reference.id)
            yield from self.uses(reference, value, handler)

    def report(
        self,
        node: Node,
        message: str,
        name: str,
        value: _Value,
        handler: Handler,
        schema: Schema,
    ) -> Iterator[Finding]:
        if node.id in self.reported:
            return
        self.reported.add(node.id)
        shape = _object(schema)
        fields = list(shape[0]) if shape is not None else []
        if message == "array":
            item = _object(schema)
            has = f" each item has {_listed(list(item[0]))}" if item is not None and item[0] else ""
            hint = (
                f"{value.what} returns the array itself: iterate it (`for (const item of "
                f"list)`), read `list.length` or `list[0]`;{has}."
            ).replace(";.", ".")
        elif value.what == "an event":
            hint = f"Events have {_listed(fields)}."
        elif value.what.startswith("an item of "):
            hint = f"Items of {value.what[len('an item of ') :]} have {_listed(fields)}."
        elif value.what.startswith("`ctx."):
            hint = f"{value.what} returns an object with {_listed(fields)}."
        else:
            hint = f"{value.what} has {_listed(fields)}."
        arguments = {
            "expression": self.analysis.text(node),
            "property": name,
            "what": value.what,
            "suggestion": suggestion(name, fields),
            "fields": hint,
        }
        yield Finding(message, node, arguments, handler)


def _item(value: _Value, items: Schema) -> _Value:
    if value.what in ("`ctx.peek`", "`ctx.getByIds`"):
        return _Value(items, "an event")
    return _Value(items, f"an item of {value.what}")


def _listed(fields: list[str]) -> str:
    return ", ".join(f"`{f}`" for f in fields) if fields else "no fields"


def _is(node: Node | None, other: Node) -> bool:
    return node is not None and node.id == other.id


def _constant(declarator: Node) -> bool:
    declaration = declarator.parent
    if declaration is None:
        return False
    if declaration.type == "lexical_declaration":
        kind = declaration.children[0].type if declaration.children else ""
        return kind in ("const", "let")
    return False


def _for_of_constant(loop: Node) -> bool:
    kind = loop.child_by_field_id(Field.KIND)
    return kind is not None and kind.type in ("const", "let")


def _first_parameter(function: Node) -> Node | None:
    single = function.child_by_field_id(Field.PARAMETER)
    if single is not None:
        return single
    parameters = function.child_by_field_id(Field.PARAMETERS)
    if parameters is None or not parameters.named_child_count:
        return None
    first = parameters.named_children[0]
    return first if first.type in ("identifier", "object_pattern", "array_pattern") else None


def _used_as_data(member: Node) -> bool:
    """Whether the script relies on what `member` reads holding data."""
    node, parent = _value_parent(member)
    if parent is None:
        return False
    kind = parent.type
    if kind in ("member_expression", "subscript_expression", "call_expression"):
        return _is(
            parent.child_by_field_id(Field.OBJECT) or parent.child_by_field_id(Field.FUNCTION),
            node,
        )
    if kind == "binary_expression":
        operator = parent.child_by_field_id(Field.OPERATOR)
        left = parent.child_by_field_id(Field.LEFT)
        return operator is not None and operator.type in ("||", "??") and _is(left, node)
    if kind == "for_in_statement":
        return _is(parent.child_by_field_id(Field.RIGHT), node)
    return kind == "spread_element"


def _scope_of(name: Node) -> Node | None:
    node = name.parent
    while node is not None:
        if node.type in _SCOPES:
            return node
        node = node.parent
    return None


@dataclass
class _Index:
    """Every identifier of a function by name, and how often each name is declared or
    assigned there."""

    names: dict[str, list[Node]]
    declared: dict[str, int]
    written: set[str]
    """Property names the function assigns or deletes on any object (``x.id = ...``)."""
    opaque: bool = False
    """The function adds properties in ways not read here (``Object.assign``, ...)."""


def _index(function: Node, text_of: Callable[[Node], str]) -> _Index:
    index = _Index({}, {}, set())
    stack = [function]
    while stack:
        node = stack.pop()
        kind = node.type
        if kind == "member_expression":
            _note_write(node, index, text_of)
        if kind in ("identifier", "shorthand_property_identifier_pattern"):
            text = text_of(node)
            if kind == "identifier":
                index.names.setdefault(text, []).append(node)
            if kind == "shorthand_property_identifier_pattern" or _declares(node):
                index.declared[text] = index.declared.get(text, 0) + 1
            continue
        stack.extend(node.children)
    return index


_ADDERS = frozenset(
    {"Object.assign", "Object.defineProperty", "Object.defineProperties", "Reflect.set"}
)


def _note_write(member: Node, index: _Index, text_of: Callable[[Node], str]) -> None:
    prop = member.child_by_field_id(Field.PROPERTY)
    if prop is None:
        return
    if text_of(member) in _ADDERS:
        index.opaque = True
        return
    node, parent = _value_parent(member)
    if parent is None:
        return
    kind = parent.type
    target = kind in ("assignment_expression", "augmented_assignment_expression") and _is(
        parent.child_by_field_id(Field.LEFT), node
    )
    deleted = kind == "unary_expression" and text_of(parent).startswith("delete")
    if target or deleted or kind == "update_expression":
        index.written.add(text_of(prop))


def _declares(identifier: Node) -> bool:
    parent = identifier.parent
    if parent is None:
        return False
    if parent.type in _DECLARING_PARENTS:
        return True
    field = _DECLARED_BY.get(parent.type)
    return field is not None and _is(parent.child_by_field_id(field), identifier)


rule = Rule(META, check)
