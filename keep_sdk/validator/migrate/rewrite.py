"""`migrate`: rewrite the original product's script format into this SDK's, by text edits.

The original format (see docs/migrate.md) declares ``const workflow = {...}``,
calls tools through globals (``Topics.peek({topic, limit})``, ``Gmail.api({method,
...})``) and calls handlers without ``ctx``. The rewrite keeps every line it does
not need to change: it edits byte ranges of the parsed tree and leaves the rest of
the text as it was. Where no mapping exists it adds a ``// TODO(migrate): ...``
line above the statement and a `MigrationNote`; the call stays as it was, so the
validator still reports it (`legacy-format`).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import tree_sitter

from keep_sdk.validator.fields import Field
from keep_sdk.validator.migrate._arguments import tool_arguments
from keep_sdk.validator.migrate._results import ResultEdit, ResultUse, result_edits
from keep_sdk.validator.migrate._tools import TOOL_OPERATIONS, ToolOperation
from keep_sdk.validator.scope import string_literal
from keep_sdk.validator.source import parse_tree

__all__ = ["Migration", "MigrationNote", "migrate"]

Node = tree_sitter.Node

TODO = "// TODO(migrate):"
REVIEW = "review:"
"""A TODO whose message starts so is one the validator cannot see: the script runs, but
may not do what the original did until a person has read that line."""
_FUNCTIONS = frozenset(
    {
        "arrow_function",
        "function_expression",
        "function",
        "method_definition",
        "function_declaration",
    }
)
_TOPIC_METHODS = frozenset({"peek", "publish", "getByIds", "registerInput"})
_TOOLS = frozenset(tool for tool, _ in TOOL_OPERATIONS) | {
    "GoogleDocs",
    "GoogleDrive",
    "GoogleCalendar",
    "Notion",
    "Weather",
    "Web",
    "Memory",
    "Files",
    "Images",
    "Pdf",
    "Audio",
    "Text",
    "User",
}


@dataclass(frozen=True)
class MigrationNote:
    """Something a person must finish (`todo`) or should know, at `line` of the migrated script."""

    line: int
    message: str
    todo: bool = True

    @property
    def review(self) -> bool:
        """A TODO the validator does not report (a changed result shape or query)."""
        return self.todo and self.message.startswith(REVIEW)


@dataclass(frozen=True)
class Migration:
    """The migrated script and its notes; `changed` is False when nothing was rewritten."""

    source: str
    notes: tuple[MigrationNote, ...]
    changed: bool


@dataclass
class _Edit:
    start: int
    end: int
    text: str
    note: str | None = None
    todo: bool = False


@dataclass
class _Rewriter:
    data: bytes
    name: str
    root: Node
    edits: list[_Edit] = field(default_factory=list)
    handlers: set[int] = field(default_factory=set)
    info: list[str] = field(default_factory=list)
    results: list[tuple[Node, ToolOperation]] = field(default_factory=list)
    replaced: list[tuple[int, int]] = field(default_factory=list)
    threaded: dict[int, bool] = field(default_factory=dict)

    def text(self, node: Node) -> str:
        return self.data[node.start_byte : node.end_byte].decode("utf-8", "surrogatepass")

    def replace(self, node: Node, text: str) -> None:
        self.edits.append(_Edit(node.start_byte, node.end_byte, text))
        self.replaced.append((node.start_byte, node.end_byte))

    def insert(self, at: int, text: str) -> None:
        self.edits.append(_Edit(at, at, text))

    def todo(self, node: Node, message: str) -> None:
        statement = _statement(node)
        line_start = self.data.rfind(b"\n", 0, statement.start_byte) + 1
        indent = self.data[line_start : statement.start_byte]
        if indent.strip():
            indent = b""
        comment = f"{indent.decode()}{TODO} {message}\n"
        previous = self.data[self.data.rfind(b"\n", 0, max(line_start - 1, 0)) + 1 : line_start]
        if previous.strip() == comment.strip().encode("utf-8", "surrogatepass"):
            self.edits.append(_Edit(line_start, line_start, "", message, todo=True))
            return
        self.edits.append(_Edit(line_start, line_start, comment, message, todo=True))

    def declaration(self, root: Node) -> Node | None:
        """Rewrite ``const workflow = {...}`` as ``export default Keep.workflow({...})``."""
        for statement in root.named_children:
            if statement.type not in ("lexical_declaration", "variable_declaration"):
                continue
            for declarator in statement.named_children:
                if declarator.type != "variable_declarator":
                    continue
                target = declarator.child_by_field_id(Field.NAME)
                value = declarator.child_by_field_id(Field.VALUE)
                if target is None or value is None or self.text(target) != "workflow":
                    continue
                if value.type != "object" or len(statement.named_children) != 1:
                    self.todo(
                        statement, "declare the workflow as `export default Keep.workflow({...})`"
                    )
                    return None
                self.edits.append(
                    _Edit(statement.start_byte, value.start_byte, "export default Keep.workflow(")
                )
                self.edits.append(_Edit(value.end_byte, statement.end_byte, ");"))
                if _entry(value, "name") is None:
                    self.insert(value.start_byte + 1, f"\n  name: {_js_string(self.name)},")
                return value
        return None

    def sections(self, config: Node) -> None:
        producers = _entry(config, "producers")
        if producers is not None and producers.type == "object":
            for producer in _entries(producers):
                value = _value(producer)
                if value is None or value.type != "object":
                    continue
                handler = _entry(value, "handler")
                self.handler(handler, producer)
        consumers = _entry(config, "consumers")
        if consumers is not None and consumers.type == "object":
            for consumer in _entries(consumers):
                value = _value(consumer)
                if value is None or value.type != "object":
                    continue
                self.consumer(value)

    def consumer(self, value: Node) -> None:
        self.insert(value.start_byte, "Keep.consumer(")
        present = {_key_text(self, entry): entry for entry in _entries(value)}
        for phase in ("prepare", "mutate", "next"):
            entry = present.get(phase)
            if entry is not None:
                self.handler(entry if entry.type == "method_definition" else _value(entry), entry)
        last = [child for child in value.named_children if child.type != "comment"]
        missing = [phase for phase in ("mutate", "next") if phase not in present]
        if missing and last:
            indent = _indent(self.data, last[-1].start_byte)
            added = "".join(
                f",\n{indent}{phase}: async ({_EMPTY_PARAMETERS[phase]}) => {{}}"
                for phase in missing
            )
            self.insert(last[-1].end_byte, added)
            self.info.append(
                "added an empty "
                + " and ".join(f"`{p}`" for p in missing)
                + " (every consumer here has prepare, mutate and next)"
            )
        self.insert(value.end_byte, ")")

    def handler(self, function: Node | None, owner: Node) -> None:
        if function is None:
            return
        if function.type == "identifier":
            declared = self.top_level_function(self.text(function))
            if declared is not None:
                function = declared
        if function.type not in _FUNCTIONS:
            self.todo(
                owner, "the handler is not a function literal: add `ctx` as its first parameter"
            )
            return
        self.handlers.add(function.id)
        parameters = function.child_by_field_id(Field.PARAMETERS)
        if parameters is None:
            single = function.child_by_field_id(Field.PARAMETER)
            if single is not None:
                self.replace(single, f"(ctx, {self.text(single)})")
            return
        names = [child for child in parameters.named_children if child.type != "comment"]
        if names and self.text(names[0]) == "ctx":
            return
        if names:
            self.insert(names[0].start_byte, "ctx, ")
        else:
            self.replace(parameters, "(ctx)")

    def top_level_function(self, name: str) -> Node | None:
        """The function a top-level ``function name`` or ``const name = ... =>`` declares."""
        for statement in self.root.named_children:
            if statement.type == "function_declaration":
                declared = statement.child_by_field_id(Field.NAME)
                if declared is not None and self.text(declared) == name:
                    return statement
            if statement.type == "lexical_declaration":
                for declarator in statement.named_children:
                    target = declarator.child_by_field_id(Field.NAME)
                    value = declarator.child_by_field_id(Field.VALUE)
                    if target is not None and value is not None and self.text(target) == name:
                        return value
        return None

    def calls(self, root: Node) -> None:
        done: list[tuple[int, int]] = []
        stack = [root]
        found: list[Node] = []
        while stack:
            node = stack.pop()
            if node.type == "call_expression":
                found.append(node)
            stack.extend(reversed(node.named_children))
        for call in found:
            if any(start <= call.start_byte and call.end_byte <= end for start, end in done):
                continue
            if self.call(call):
                done.append((call.start_byte, call.end_byte))

    def call(self, call: Node) -> bool:
        callee = call.child_by_field_id(Field.FUNCTION)
        if callee is None or callee.type != "member_expression":
            return False
        obj = callee.child_by_field_id(Field.OBJECT)
        prop = callee.child_by_field_id(Field.PROPERTY)
        if obj is None or prop is None or obj.type != "identifier":
            return False
        tool, method = self.text(obj), self.text(prop)
        if tool != "Topics" and tool not in _TOOLS:
            return False
        if not self.has_ctx(call) and not self.thread_ctx(call):
            self.todo(
                call,
                f"`{tool}.{method}` is called outside a handler: pass `ctx` to this function "
                "and call `ctx` here",
            )
            return True
        argument = _only_object_argument(call)
        if tool == "Topics":
            return self.topics(call, method, argument)
        return self.tool(call, tool, method, argument)

    def thread_ctx(self, call: Node) -> bool:
        """Give the top-level helper around `call` a first parameter ``ctx`` and pass
        ``ctx`` at each of its calls, when every use of the helper is a direct call from
        code that has ``ctx`` (and not inside an old tool call being rewritten)."""
        helper = _top_level_function(self, call)
        if helper is None:
            return False
        function, name = helper
        if function.id in self.threaded:
            return self.threaded[function.id]
        self.threaded[function.id] = False
        sites: list[Node] = []
        for node in _descendants(self.root):
            if node.type != "identifier" or self.text(node) != name:
                continue
            if function.start_byte <= node.start_byte < function.end_byte:
                if node.parent is not None and node.parent.id == function.id:
                    continue
                return False
            parent = node.parent
            if parent is None or (
                parent.type == "variable_declarator"
                and parent.child_by_field_id(Field.NAME) == node
            ):
                continue
            if parent.type != "call_expression" or parent.child_by_field_id(Field.FUNCTION) != node:
                return False
            if not self.has_ctx(parent) or self.inside_old_call(parent):
                return False
            sites.append(parent)
        if not sites:
            return False
        parameters = function.child_by_field_id(Field.PARAMETERS)
        if parameters is None:
            return False
        names = [c for c in parameters.named_children if c.type != "comment"]
        if names:
            self.insert(names[0].start_byte, "ctx, ")
        else:
            self.replace(parameters, "(ctx)")
        for site in sites:
            arguments = site.child_by_field_id(Field.ARGUMENTS)
            if arguments is None:
                continue
            values = [c for c in arguments.named_children if c.type != "comment"]
            self.insert(arguments.start_byte + 1, "ctx, " if values else "ctx")
        self.threaded[function.id] = True
        self.handlers.add(function.id)
        self.info.append(f"`{name}` calls tools: it now takes `ctx` first, and is passed it")
        return True

    def inside_old_call(self, node: Node) -> bool:
        current = node.parent
        while current is not None:
            if current.type == "call_expression":
                callee = current.child_by_field_id(Field.FUNCTION)
                obj = callee.child_by_field_id(Field.OBJECT) if callee is not None else None
                if obj is not None and self.text(obj) in _TOOLS | {"Topics"}:
                    return True
            current = current.parent
        return False

    def has_ctx(self, node: Node) -> bool:
        current = node.parent
        while current is not None:
            if current.type in _FUNCTIONS:
                if current.id in self.handlers:
                    return True
                parameters = current.child_by_field_id(Field.PARAMETERS)
                single = current.child_by_field_id(Field.PARAMETER)
                names = parameters.named_children if parameters is not None else []
                if single is not None:
                    names = [single]
                if any(self.text(name) == "ctx" for name in names):
                    return True
            current = current.parent
        return False

    def topics(self, call: Node, method: str, argument: Node | None) -> bool:
        if method not in _TOPIC_METHODS:
            self.todo(call, f"`Topics.{method}` has no equivalent here")
            return True
        if method == "registerInput":
            self.todo(
                call,
                "there is no `registerInput`: publish the input as an event with a stable "
                "`messageId` (ctx.publish(topic, { messageId, title, payload }))",
            )
            return True
        fields = _fields(self, argument) if argument is not None else None
        topic = fields.get("topic") if fields is not None else None
        if fields is None or topic is None or "..." in fields:
            self.todo(
                call,
                f"`Topics.{method}` takes `{{ topic, ... }}`: "
                f"rewrite it as `ctx.{method}(topic, ...)`",
            )
            return True
        if method == "publish":
            event = fields.get("event")
            if event is not None and topic.lstrip().startswith("["):
                return self.publish_each(call, argument, topic, event)
            if event is None:
                self.todo(call, "publish to one topic per call: `ctx.publish(topic, event)`")
                return True
            self.replace(call, f"ctx.publish({topic}, {self.titled(argument, topic, event)})")
            return True
        if method == "getByIds":
            ids = fields.get("ids")
            if ids is None:
                self.todo(call, "`ctx.getByIds(topic, ids)` needs the ids")
                return True
            self.replace(call, f"ctx.getByIds({topic}, {ids})")
            return True
        options = ", ".join(f"{key}: {value}" for key, value in fields.items() if key != "topic")
        self.replace(
            call, f"ctx.peek({topic}, {{ {options} }})" if options else f"ctx.peek({topic})"
        )
        return True

    def titled(self, argument: Node | None, topic: str, event: str) -> str:
        """`event` with a ``title`` when it is an object literal without one: here every
        event needs a title (the original product had made it optional)."""
        literal = _pair_value(self, argument, "event") if argument is not None else None
        if literal is None or literal.type != "object":
            return event
        fields = _fields(self, literal)
        if fields is None or "title" in fields or "..." in fields:
            return event
        name = _string(self, topic)
        label = (
            name if name is not None and "`" not in name and "$" not in name else "${" + topic + "}"
        )
        message_id = fields.get("messageId")
        title = f"`{label} ${{{message_id}}}`" if message_id else f"`{label}`"
        inner = event.strip()[1:].lstrip()
        return f"{{ title: {title}, {inner}" if inner != "}" else f"{{ title: {title} }}"

    def publish_each(self, call: Node, argument: Node | None, topics: str, event: str) -> bool:
        """``await Topics.publish({ topic: ["a", "b"], event })`` as a statement → one
        ``await ctx.publish(topic, event)`` statement per topic, when the topics are string
        literals and evaluating `event` twice cannot differ (no call in it)."""
        statement = _statement(call)
        names = _string_list(topics)
        awaited = call.parent is not None and call.parent.type == "await_expression"
        expression = call.parent if awaited and call.parent is not None else call
        whole = (
            statement.type == "expression_statement"
            and statement.named_children
            and statement.named_children[0].id == expression.id
        )
        if names is None or not whole or "(" in event or "`" in event:
            self.todo(call, "publish to one topic per call: `ctx.publish(topic, event)`")
            return True
        indent = _indent(self.data, statement.start_byte)
        prefix = "await " if awaited else ""
        self.replace(
            statement,
            f"\n{indent}".join(
                f"{prefix}ctx.publish({name}, {self.titled(argument, name, event)});"
                for name in names
            ),
        )
        return True

    def tool(self, call: Node, tool: str, method: str, argument: Node | None) -> bool:
        fields = _fields(self, argument) if argument is not None and method == "api" else None
        api_method = _string(self, fields.get("method")) if fields is not None else None
        mapping = TOOL_OPERATIONS.get((tool, api_method)) if api_method is not None else None
        if fields is None or mapping is None or "..." in fields:
            what = f"`{tool}.{method}`" + (f" method {api_method!r}" if api_method else "")
            self.todo(
                call,
                f"{what} has no connector operation here: call a configured connector "
                "through ctx (`keep connectors` lists them)",
            )
            return True
        if argument is None:
            return False
        converted = tool_arguments(self.text, argument, mapping)
        if converted.todo is not None:
            self.todo(call, f"`{tool}.api` {api_method!r}: {converted.todo}")
            return True
        where = f"`{tool}.api` {api_method!r} → `ctx.{mapping.target}`"
        if converted.dropped:
            why = " (its account is configured once, in keep.toml)"
            self.info.append(
                f"{where}: dropped {', '.join(f'`{k}`' for k in converted.dropped)}, which the "
                "operation does not take" + (why if "account" in converted.dropped else "")
            )
        self.info.extend(f"{where}: {note}" for note in converted.notes)
        for review in converted.reviews:
            self.todo(call, f"{REVIEW} `ctx.{mapping.target}`: {review}")
        self.replace(call, f"ctx.{mapping.target}({{ {', '.join(converted.parts)} }})")
        if mapping.result is not None:
            self.results.append((call, mapping))
        return True

    def result_uses(self) -> None:
        """Follow each rewritten call's new result shape where its result is used."""
        for call, mapping in self.results:
            assert mapping.result is not None
            edits, uses = result_edits(call, mapping.target, mapping.result, self.text)
            left = list(uses)
            for edit in edits:
                if not self.inside_replaced(edit):
                    self.edits.append(_Edit(edit.start, edit.end, edit.text))
                    continue
                node = self.root.descendant_for_byte_range(edit.start, edit.end) or call
                message = (
                    f"{REVIEW} the result of `ctx.{mapping.target}` was {mapping.result.old}, "
                    f"is now {mapping.result.new}: rewrite this use"
                )
                left.append(ResultUse(node, message))
            seen: set[int] = set()
            for use in left:
                statement = _statement(use.node)
                if statement.id in seen:
                    continue
                seen.add(statement.id)
                self.todo(use.node, use.message)

    def inside_replaced(self, edit: ResultEdit) -> bool:
        return any(start < edit.end and edit.start < end for start, end in self.replaced)


def _statement(node: Node) -> Node:
    statement = node
    while statement.parent is not None and statement.parent.type not in (
        "program",
        "statement_block",
        "switch_case",
        "switch_default",
    ):
        statement = statement.parent
    return statement


_EMPTY_PARAMETERS = {"mutate": "ctx, prepared", "next": "ctx, prepared, mutationResult"}


def _js_string(text: str) -> str:
    escaped = text.replace("\\", "\\\\").replace('"', '\\"')
    return f'"{escaped}"'


def _indent(data: bytes, at: int) -> str:
    line_start = data.rfind(b"\n", 0, at) + 1
    indent = data[line_start:at]
    return indent.decode() if not indent.strip() else "  "


def _entries(obj: Node) -> list[Node]:
    return [c for c in obj.named_children if c.type in ("pair", "method_definition")]


def _value(entry: Node) -> Node | None:
    if entry.type == "method_definition":
        return entry
    return entry.child_by_field_id(Field.VALUE)


def _key_text(rewriter: _Rewriter, entry: Node) -> str | None:
    key = entry.child_by_field_id(Field.KEY if entry.type == "pair" else Field.NAME)
    if key is None:
        return None
    if key.type == "string":
        return string_literal(key, rewriter.data)
    return rewriter.text(key) if key.type == "property_identifier" else None


def _entry(obj: Node, name: str) -> Node | None:
    for entry in _entries(obj):
        key = entry.child_by_field_id(Field.KEY if entry.type == "pair" else Field.NAME)
        if key is None:
            continue
        text = (key.text or b"").decode("utf-8", "replace").strip("'\"")
        if text == name:
            return _value(entry)
    return None


def _only_object_argument(call: Node) -> Node | None:
    arguments = call.child_by_field_id(Field.ARGUMENTS)
    if arguments is None:
        return None
    values = [c for c in arguments.named_children if c.type != "comment"]
    return values[0] if len(values) == 1 and values[0].type == "object" else None


def _fields(rewriter: _Rewriter, obj: Node) -> dict[str, str] | None:
    """The literal's keys and value texts; ``"..."`` marks a spread; None for a computed key."""
    found: dict[str, str] = {}
    for child in obj.named_children:
        if child.type == "comment":
            continue
        if child.type == "shorthand_property_identifier":
            found[rewriter.text(child)] = rewriter.text(child)
        elif child.type == "pair":
            key = _key_text(rewriter, child)
            value = child.child_by_field_id(Field.VALUE)
            if key is None or value is None:
                return None
            found[key] = rewriter.text(value)
        elif child.type == "spread_element":
            found["..."] = rewriter.text(child)
        else:
            return None
    return found


def _descendants(node: Node) -> list[Node]:
    found: list[Node] = []
    stack = [node]
    while stack:
        current = stack.pop()
        found.append(current)
        stack.extend(reversed(current.named_children))
    return found


def _top_level_function(rewriter: _Rewriter, node: Node) -> tuple[Node, str] | None:
    """The function declared at the top level (``function f`` or ``const f = ...``) that
    contains `node`, with its name."""
    current = node.parent
    while current is not None and current.parent is not None:
        parent = current.parent
        if current.type == "function_declaration" and parent.type == "program":
            name = current.child_by_field_id(Field.NAME)
            return (current, rewriter.text(name)) if name is not None else None
        if current.type in _FUNCTIONS and parent.type == "variable_declarator":
            declaration = parent.parent
            target = parent.child_by_field_id(Field.NAME)
            if (
                declaration is not None
                and declaration.parent is not None
                and declaration.parent.type == "program"
                and target is not None
                and target.type == "identifier"
            ):
                return current, rewriter.text(target)
            return None
        current = parent
    return None


def _pair_value(rewriter: _Rewriter, obj: Node, name: str) -> Node | None:
    for child in obj.named_children:
        if child.type == "pair" and _key_text(rewriter, child) == name:
            return child.child_by_field_id(Field.VALUE)
    return None


def _string_list(text: str) -> list[str] | None:
    """The items of an array literal of plain string literals (as written); None otherwise."""
    inner = text.strip()
    if not (inner.startswith("[") and inner.endswith("]")):
        return None
    items = [item.strip() for item in inner[1:-1].split(",") if item.strip()]
    plain = all(
        len(item) >= 2
        and item[0] in "'\""
        and item[-1] == item[0]
        and item[0] not in item[1:-1]
        and "\\" not in item
        for item in items
    )
    return items if items and plain else None


def _string(rewriter: _Rewriter, text: str | None) -> str | None:
    if text is None or len(text) < 2 or text[0] not in "'\"" or text[-1] != text[0]:
        return None
    inner = text[1:-1]
    return inner if "\\" not in inner else None


def migrate(source: str, *, name: str = "migrated") -> Migration:
    """Rewrite `source` from the original product's format; `name` names the workflow
    when the script does not.

    Never raises for a string: what cannot be rewritten gets a TODO line and a note.
    """
    data = source.encode("utf-8", "surrogatepass")
    tree = parse_tree(data)
    rewriter = _Rewriter(data, name, tree.root_node)
    config = rewriter.declaration(tree.root_node)
    if config is not None:
        rewriter.sections(config)
    rewriter.calls(tree.root_node)
    rewriter.result_uses()
    order = sorted(
        enumerate(rewriter.edits), key=lambda item: (item[1].start, item[1].end, item[0])
    )
    out = data
    for _, edit in reversed(order):
        out = out[: edit.start] + edit.text.encode("utf-8", "surrogatepass") + out[edit.end :]
    text = out.decode("utf-8", "surrogatepass")
    notes = [
        MigrationNote(n, line.split(TODO, 1)[1].strip(), True)
        for n, line in enumerate(text.split("\n"), start=1)
        if TODO in line
    ]
    notes.extend(MigrationNote(0, message, False) for message in rewriter.info)
    return Migration(text, tuple(notes), changed=text != source)
