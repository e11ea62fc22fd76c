"""Read the workflow declaration: ``export default Keep.workflow({...})`` into a manifest.

Only syntax is read: object literals, string literals, functions, and
identifiers that name module-level constants or functions. Whatever cannot be
read this way is a `ShapeProblem` (rule ``workflow-shape``); the manifest is
built only when there is none.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TypeVar

import tree_sitter

from keep_sdk.contract.workflow import (
    RESERVED_NAME_PREFIX,
    ConsumerManifest,
    CronSchedule,
    DefaultExport,
    HandlerLocation,
    IntervalSchedule,
    ProducerManifest,
    Schedule,
    WorkflowManifest,
)
from keep_sdk.model import HandlerKind, HandlerPhase, HostPolicy, trusted
from keep_sdk.validator.cron import is_valid_cron
from keep_sdk.validator.facts import Handler, ShapeProblem, TopicUse
from keep_sdk.validator.fields import Field
from keep_sdk.validator.scope import FUNCTION_TYPES, Scope, constant_string, string_literal
from keep_sdk.validator.source import SourceText

_T = TypeVar("_T")

__all__ = ["Extraction", "extract_workflow"]

Node = tree_sitter.Node

WORKFLOW_KEYS = ("name", "description", "topics", "producers", "consumers")
PRODUCER_KEYS = ("schedule", "handler", "publishes", "description")
CONSUMER_KEYS = ("subscribe", "publishes", "prepare", "mutate", "next", "description")
SCHEDULE_KEYS = ("interval", "cron")
PHASES = (HandlerPhase.PREPARE, HandlerPhase.MUTATE, HandlerPhase.NEXT)
_NAMED_PHASES = tuple((phase.value, phase) for phase in PHASES)
_INTERVAL = re.compile(r"^([1-9][0-9]*)(s|m|h|d)$")
_UNIT_SECONDS = {"s": 1, "m": 60, "h": 3600, "d": 86400}
_HANDLER_NODES = FUNCTION_TYPES | {"method_definition", "function_declaration"}
_CONSUMER = HandlerKind.CONSUMER


@dataclass
class Extraction:
    """What `extract_workflow` found."""

    manifest: WorkflowManifest | None = None
    handlers: list[Handler] = field(default_factory=list)
    problems: list[ShapeProblem] = field(default_factory=list)
    topics: list[TopicUse] = field(default_factory=list)
    declared_topics: frozenset[str] | None = None


@dataclass(slots=True)
class _Entry:
    key: str
    key_node: Node
    value: Node | None
    node: Node


class _Reader:
    def __init__(self, source: SourceText, module: Scope, policy: HostPolicy) -> None:
        self.source = source
        self.data = source.data
        self.module = module
        self.policy = policy
        self.out = Extraction()
        self.default_schedule = trusted(
            IntervalSchedule,
            {"kind": "interval", "seconds": policy.default_producer_interval_s, "every": None},
        )

    def problem(self, message_id: str, node: Node | None, **arguments: str) -> None:
        self.out.problems.append(ShapeProblem(message_id, node, dict(arguments)))

    def text(self, node: Node) -> str:
        return self.data[node.start_byte : node.end_byte].decode("utf-8", "replace")

    def resolve(self, node: Node | None) -> Node | None:
        """Follow identifiers naming module-level constants to their initializers."""
        seen = 0
        while node is not None and node.type in (
            "identifier",
            "shorthand_property_identifier",
            "parenthesized_expression",
        ):
            if node.type == "parenthesized_expression":
                inner = node.named_children
                node = inner[0] if len(inner) == 1 else None
                continue
            binding = self.module.lookup(self.text(node))
            if binding is None or binding.kind not in ("const", "function") or seen > 16:
                return node
            node = binding.init
            seen += 1
        return node

    def string(self, node: Node | None) -> str | None:
        """The string constant `node` is (see `constant_string`), names of module constants
        resolved."""
        return constant_string(node, self.module, self.data)

    def entries(self, obj: Node, what: str) -> list[_Entry]:
        found: list[_Entry] = []
        for child in obj.named_children:
            kind = child.type
            if kind == "pair":
                key_node = child.child_by_field_id(Field.KEY)
                value = child.child_by_field_id(Field.VALUE)
                key = self.key(key_node) if key_node is not None else None
                if key is None or key_node is None:
                    self.problem("computed-key", child, where=what)
                    continue
                found.append(_Entry(key, key_node, value, child))
            elif kind == "method_definition":
                key_node = child.child_by_field_id(Field.NAME)
                key = self.key(key_node) if key_node is not None else None
                if key is None or key_node is None:
                    self.problem("computed-key", child, where=what)
                    continue
                found.append(_Entry(key, key_node, child, child))
            elif kind == "shorthand_property_identifier":
                found.append(_Entry(self.text(child), child, child, child))
            elif kind == "spread_element":
                self.problem("spread", child, where=what)
        return found

    def key(self, node: Node) -> str | None:
        kind = node.type
        if kind in ("property_identifier", "number"):
            return self.text(node)
        if kind == "string":
            return string_literal(node, self.data)
        if kind == "computed_property_name" and node.named_child_count == 1:
            return self.string(node.named_children[0])
        return None

    def strings(self, node: Node | None, where: str, owner: str) -> list[str] | None:
        target = self.resolve(node)
        if target is None or target.type != "array":
            self.problem("not-string-array", node, where=where)
            return None
        values: list[str] = []
        via = "subscribe" if where.endswith(".subscribe") else "publishes"
        for element in target.named_children:
            if element.type == "comment":
                continue
            text = self.string(element)
            if text is None:
                self.problem("not-string-array", element, where=where)
                return None
            values.append(text)
            self.out.topics.append(TopicUse(element, text, via, owner=owner))  # type: ignore[arg-type]
        return values

    def read(self) -> Extraction:
        export = self.default_export()
        if export is None:
            return self.out
        statement, value = export
        config = self.workflow_config(value)
        if config is None:
            return self.out
        name: str | None = None
        topics: list[str] | None = None
        producers: list[ProducerManifest] = []
        consumers: list[ConsumerManifest] = []
        seen: set[str] = set()
        for entry in self.entries(config, "the workflow"):
            if entry.key in seen:
                self.problem("duplicate-key", entry.key_node, key=entry.key, where="the workflow")
            seen.add(entry.key)
            if entry.key == "name":
                name = self.string(entry.value)
                if name is None or not name.strip():
                    self.problem("bad-name", entry.value)
                elif name.startswith(RESERVED_NAME_PREFIX):
                    self.problem("reserved-name", entry.value, prefix=RESERVED_NAME_PREFIX)
            elif entry.key == "description":
                continue
            elif entry.key == "topics":
                topics = self.topics(entry.value)
            elif entry.key == "producers":
                producers = self.section(entry.value, "producers", self.producer)
            elif entry.key == "consumers":
                consumers = self.section(entry.value, "consumers", self.consumer)
            else:
                self.problem(
                    "unknown-key",
                    entry.key_node,
                    key=entry.key,
                    where="the workflow",
                    allowed=", ".join(WORKFLOW_KEYS),
                )
        if not producers and not consumers and "producers" not in seen and "consumers" not in seen:
            self.problem("no-handlers", config)
        if topics is not None:
            self.out.declared_topics = frozenset(topics)
        elif "topics" not in seen:
            self.out.declared_topics = frozenset()
            self.problem("no-topics", config)
        if self.out.problems:
            return self.out
        default_export = trusted(
            DefaultExport,
            {
                "statement": self.source.node_span(statement),
                "value": self.source.node_span(value),
            },
        )
        self.out.manifest = trusted(
            WorkflowManifest,
            {
                "name": name,
                "topics": topics or [],
                "producers": producers,
                "consumers": consumers,
                "default_export": default_export,
                "connectors": None,
            },
        )
        return self.out

    def default_export(self) -> tuple[Node, Node] | None:
        found: list[tuple[Node, Node]] = []
        for statement in self.source.root.named_children:
            if statement.type != "export_statement":
                continue
            value = statement.child_by_field_id(Field.VALUE)
            is_default = any(c.type == "default" for c in statement.children)
            if value is not None and is_default:
                found.append((statement, value))
            elif is_default:
                declaration = statement.child_by_field_id(Field.DECLARATION)
                self.problem("default-declaration", declaration or statement)
            else:
                self.problem("named-export", statement)
        if not found:
            self.problem("no-default-export", None)
            return None
        return found[0]

    def workflow_config(self, value: Node) -> Node | None:
        call = self.resolve(value)
        if call is None or not self.is_keep_call(call, "workflow"):
            self.problem("not-keep-workflow", value)
            return None
        arguments = call.child_by_field_id(Field.ARGUMENTS)
        args = [a for a in arguments.named_children if a.type != "comment"] if arguments else []
        config = self.resolve(args[0]) if len(args) == 1 else None
        if config is None or config.type != "object":
            self.problem("workflow-not-object", arguments or call)
            return None
        return config

    def is_keep_call(self, node: Node, method: str) -> bool:
        if node.type != "call_expression":
            return False
        callee = node.child_by_field_id(Field.FUNCTION)
        if callee is None or callee.type != "member_expression":
            return False
        obj = callee.child_by_field_id(Field.OBJECT)
        prop = callee.child_by_field_id(Field.PROPERTY)
        return (
            obj is not None
            and prop is not None
            and obj.type == "identifier"
            and self.text(obj) == "Keep"
            and self.text(prop) == method
        )

    def topics(self, node: Node | None) -> list[str] | None:
        target = self.resolve(node)
        if target is None or target.type != "object":
            self.problem("topics-not-object", node)
            return None
        names: list[str] = []
        problems = len(self.out.problems)
        entries = self.entries(target, "topics")
        if len(self.out.problems) > problems:
            return None
        for entry in entries:
            if entry.key in names:
                self.problem("duplicate-key", entry.key_node, key=entry.key, where="topics")
            names.append(entry.key)
        return names

    def section(
        self, node: Node | None, name: str, build: Callable[[_Entry], _T | None]
    ) -> list[_T]:
        """The handlers of the `name` object (producers or consumers), as `build` reads them."""
        target = self.resolve(node)
        if target is None or target.type != "object":
            self.problem("section-not-object", node, section=name)
            return []
        built = (build(entry) for entry in self.entries(target, name))
        return [handler for handler in built if handler is not None]

    def producer(self, entry: _Entry) -> ProducerManifest | None:
        where = f"producers.{entry.key}"
        value = entry.value if entry.node.type == "method_definition" else self.resolve(entry.value)
        default = self.default_schedule
        if value is not None and value.type in _HANDLER_NODES:
            location = self.producer_handler(value, entry.value, entry.key)
            return trusted(
                ProducerManifest,
                {"name": entry.key, "schedule": default, "handler": location, "publishes": None},
            )
        if value is None or value.type != "object":
            self.problem("producer-not-function", entry.value or entry.node, where=where)
            return None
        schedule: Schedule = default
        scheduled = False
        handler_node: Node | None = None
        handler_ref: Node | None = None
        publishes: list[str] | None = None
        for item in self.entries(value, where):
            if item.key == "schedule":
                scheduled = True
                schedule = self.schedule(item.value, where) or default
            elif item.key == "handler":
                handler_ref = item.value
                handler_node = (
                    item.value
                    if item.node.type == "method_definition"
                    else self.resolve(item.value)
                )
            elif item.key == "publishes":
                publishes = self.strings(item.value, f"{where}.publishes", entry.key)
            elif item.key != "description":
                self.problem(
                    "unknown-key",
                    item.key_node,
                    key=item.key,
                    where=where,
                    allowed=", ".join(PRODUCER_KEYS),
                )
        if handler_node is None:
            self.problem("producer-without-handler", entry.key_node, where=where)
            return None
        if handler_node.type not in _HANDLER_NODES:
            self.problem("not-a-function", handler_ref, where=f"{where}.handler")
            return None
        if not scheduled:
            self.problem("producer-without-schedule", entry.key_node, where=where)
        location = self.producer_handler(handler_node, handler_ref, entry.key, publishes)
        return trusted(
            ProducerManifest,
            {"name": entry.key, "schedule": schedule, "handler": location, "publishes": publishes},
        )

    def schedule(self, node: Node | None, where: str) -> Schedule | None:
        target = self.resolve(node)
        if target is None or target.type != "object":
            self.problem("bad-schedule", node, where=where, detail="it must be an object")
            return None
        items = self.entries(target, f"{where}.schedule")
        keys = [i.key for i in items]
        if sorted(keys) not in (["interval"], ["cron"]):
            self.problem(
                "bad-schedule",
                target,
                where=where,
                detail="give exactly one of `interval` or `cron`",
            )
            return None
        item = items[0]
        text = self.string(item.value)
        if item.key == "interval":
            match = _INTERVAL.match(text or "")
            if text is None or match is None:
                self.problem(
                    "bad-schedule",
                    item.value,
                    where=where,
                    detail='`interval` must be a string such as "30s", "5m", "1h" or "1d"',
                )
                return None
            seconds = int(match.group(1)) * _UNIT_SECONDS[match.group(2)]
            return trusted(
                IntervalSchedule, {"kind": "interval", "seconds": float(seconds), "every": text}
            )
        if text is None or not is_valid_cron(text):
            self.problem(
                "bad-schedule",
                item.value,
                where=where,
                detail='`cron` must be a five-field cron expression such as "*/5 * * * *"',
            )
            return None
        return trusted(CronSchedule, {"kind": "cron", "cron": text})

    def consumer(self, entry: _Entry) -> ConsumerManifest | None:
        where = f"consumers.{entry.key}"
        value = self.resolve(entry.value)
        if value is not None and self.is_keep_call(value, "consumer"):
            arguments = value.child_by_field_id(Field.ARGUMENTS)
            args = [a for a in arguments.named_children if a.type != "comment"] if arguments else []
            value = self.resolve(args[0]) if len(args) == 1 else None
        if value is None or value.type != "object":
            self.problem("consumer-not-object", entry.value or entry.node, where=where)
            return None
        subscribe: list[str] | None = None
        publishes: list[str] | None = None
        phases: dict[str, tuple[Node, Node | None]] = {}
        present: set[str] = set()
        has_subscribe = False
        for item in self.entries(value, where):
            if item.key == "subscribe":
                has_subscribe = True
                subscribe = self.strings(item.value, f"{where}.subscribe", entry.key)
                if subscribe == []:
                    self.problem("empty-subscribe", item.value, where=where)
            elif item.key == "publishes":
                publishes = self.strings(item.value, f"{where}.publishes", entry.key)
            elif item.key in ("prepare", "mutate", "next"):
                present.add(item.key)
                node = (
                    item.value
                    if item.node.type == "method_definition"
                    else self.resolve(item.value)
                )
                if node is None or node.type not in _HANDLER_NODES:
                    self.problem("not-a-function", item.value, where=f"{where}.{item.key}")
                    continue
                phases[item.key] = (node, item.value)
            elif item.key != "description":
                self.problem(
                    "unknown-key",
                    item.key_node,
                    key=item.key,
                    where=where,
                    allowed=", ".join(CONSUMER_KEYS),
                )
        missing = [name for name, _ in _NAMED_PHASES if name not in present]
        if not has_subscribe:
            self.problem("consumer-without-subscribe", entry.key_node, where=where)
        if missing:
            self.problem(
                "consumer-missing-phase",
                entry.key_node,
                where=where,
                missing=", ".join(f"`{m}`" for m in missing),
            )
        locations: dict[str, HandlerLocation] = {}
        for name, phase in _NAMED_PHASES:
            if name in phases:
                node, ref = phases[name]
                locations[name] = self.location(node, ref, phase)
        manifest: ConsumerManifest | None = None
        if len(locations) == len(_NAMED_PHASES) and subscribe is not None:
            manifest = trusted(
                ConsumerManifest,
                {
                    "name": entry.key,
                    "subscribe": subscribe,
                    "publishes": publishes,
                    "prepare": locations["prepare"],
                    "mutate": locations["mutate"],
                    "next": locations["next"],
                },
            )
        declared = tuple(publishes) if publishes is not None else None
        for name, phase in _NAMED_PHASES:
            if name in phases:
                self.out.handlers.append(
                    Handler(_CONSUMER, entry.key, phase, phases[name][0], manifest, declared)
                )
        return manifest

    def producer_handler(
        self, node: Node, ref: Node | None, name: str, publishes: list[str] | None = None
    ) -> HandlerLocation:
        declared = tuple(publishes) if publishes is not None else None
        self.out.handlers.append(
            Handler(HandlerKind.PRODUCER, name, HandlerPhase.PRODUCER, node, None, declared)
        )
        return self.location(node, ref, HandlerPhase.PRODUCER)

    def location(self, node: Node, ref: Node | None, phase: HandlerPhase) -> HandlerLocation:
        function_name = None
        if ref is not None and ref.type in ("identifier", "shorthand_property_identifier"):
            function_name = self.text(ref)
        return trusted(
            HandlerLocation,
            {"phase": phase, "span": self.source.node_span(node), "function_name": function_name},
        )


def extract_workflow(source: SourceText, module: Scope, policy: HostPolicy) -> Extraction:
    """Read the workflow declaration of `source` (see the module docstring)."""
    return _Reader(source, module, policy).read()
