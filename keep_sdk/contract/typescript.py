"""TypeScript declarations of what a script may call, generated from the connector manifest.

`schema_type` turns one JSON Schema (the argument schemas connectors declare) into a
TypeScript type; `declarations` writes the ``.d.ts`` of ``Keep``, ``ctx`` in each phase
(only what `PHASE_TABLE` lets the phase call), every operation's arguments and results,
events, ``PrepareResult`` and the handler signatures, with JSDoc from the descriptions.
``keep connectors --format typescript`` and the MCP server's resource print it.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping
from typing import Any

from keep_sdk.contract.manifest import ConnectorManifest, Manifest, OperationManifest
from keep_sdk.contract.phases import MutateReads, allowed_kinds, allowed_topic_operations
from keep_sdk.model import HandlerPhase

__all__ = ["declarations", "schema_type"]

_IDENTIFIER = re.compile(r"^[A-Za-z_$][A-Za-z0-9_$]*$")
_PRIMITIVES = {
    "string": "string",
    "integer": "number",
    "number": "number",
    "boolean": "boolean",
    "null": "null",
}
_CTX = {
    HandlerPhase.PRODUCER: "ProducerCtx",
    HandlerPhase.PREPARE: "PrepareCtx",
    HandlerPhase.MUTATE: "MutateCtx",
    HandlerPhase.NEXT: "NextCtx",
}


def _doc(lines: Iterable[str], indent: str) -> str:
    text = [line.replace("``", "`").replace("*/", "*\\/").rstrip() for line in lines]
    text = [line for chunk in text for line in chunk.splitlines()]
    while text and not text[-1]:
        text.pop()
    if not text:
        return ""
    if len(text) == 1:
        return f"{indent}/** {text[0]} */\n"
    body = "".join(f"{indent} * {line}".rstrip() + "\n" for line in text)
    return f"{indent}/**\n{body}{indent} */\n"


def _key(name: str) -> str:
    return name if _IDENTIFIER.match(name) else json.dumps(name)


def _group(types: list[str], joiner: str) -> str:
    unique = list(dict.fromkeys(types))
    if len(unique) == 1:
        return unique[0]
    return joiner.join(
        f"({t})" if ("|" in t or "&" in t) and joiner == " & " else t for t in unique
    )


def _array_of(item: str) -> str:
    return f"({item})[]" if any(c in item for c in "|&") or item.startswith("(") else f"{item}[]"


def schema_type(
    schema: Mapping[str, Any] | bool,
    *,
    defs: Mapping[str, Any] | None = None,
    indent: str = "",
    _seen: frozenset[str] = frozenset(),
) -> str:
    """The TypeScript type of the values `schema` accepts.

    Handles ``type`` (one or a list), ``enum``, ``const``, ``anyOf``/``oneOf`` (unions),
    ``allOf`` (intersections), arrays (``items``, ``prefixItems`` as a tuple), objects
    (``properties`` with ``required``; ``additionalProperties`` false, true, absent or a
    schema) and ``$ref`` into ``$defs``/``definitions`` (inlined; a reference back into a
    definition being expanded is ``unknown``). A schema that says nothing is ``unknown``;
    ``false`` is ``never``. Property descriptions become JSDoc. `indent` is the indentation
    of the line the type starts on."""
    if schema is True:
        return "unknown"
    if schema is False:
        return "never"
    defs = {**(defs or {}), **schema.get("$defs", {}), **schema.get("definitions", {})}
    if "$ref" in schema:
        name = str(schema["$ref"]).rsplit("/", 1)[-1]
        if name in _seen or name not in defs:
            return "unknown"
        return schema_type(defs[name], defs=defs, indent=indent, _seen=_seen | {name})
    if "const" in schema:
        return json.dumps(schema["const"])
    if "enum" in schema:
        return _group([json.dumps(v) for v in schema["enum"]], " | ") or "never"
    for combinator, joiner in (("anyOf", " | "), ("oneOf", " | "), ("allOf", " & ")):
        if combinator in schema:
            parts = [
                schema_type(s, defs=defs, indent=indent, _seen=_seen) for s in schema[combinator]
            ]
            return _group(parts, joiner) or "never"
    declared = schema.get("type")
    if isinstance(declared, list):
        return _group(
            [
                schema_type({**schema, "type": t}, defs=defs, indent=indent, _seen=_seen)
                for t in declared
            ],
            " | ",
        )
    if declared == "array" or (declared is None and ("items" in schema or "prefixItems" in schema)):
        return _array(schema, defs, indent, _seen)
    if declared == "object" or (
        declared is None and ("properties" in schema or "additionalProperties" in schema)
    ):
        return _object(schema, defs, indent, _seen)
    if isinstance(declared, str) and declared in _PRIMITIVES:
        return _PRIMITIVES[declared]
    return "unknown"


def _array(
    schema: Mapping[str, Any], defs: Mapping[str, Any], indent: str, seen: frozenset[str]
) -> str:
    if "prefixItems" in schema:
        items = [
            schema_type(s, defs=defs, indent=indent, _seen=seen) for s in schema["prefixItems"]
        ]
        rest = schema.get("items", False)
        if rest is not False:
            items.append("..." + _array_of(schema_type(rest, defs=defs, indent=indent, _seen=seen)))
        return "[" + ", ".join(items) + "]"
    return _array_of(schema_type(schema.get("items", True), defs=defs, indent=indent, _seen=seen))


def _object(
    schema: Mapping[str, Any], defs: Mapping[str, Any], indent: str, seen: frozenset[str]
) -> str:
    properties: Mapping[str, Any] = schema.get("properties", {})
    required = set(schema.get("required", []))
    inner = indent + "  "
    lines: list[str] = []
    types: list[str] = []
    for name, sub in properties.items():
        written = schema_type(sub, defs=defs, indent=inner, _seen=seen)
        types.append(written)
        if isinstance(sub, Mapping):
            notes = [sub.get("description", "")]
            if "default" in sub:
                notes.append(f"@default {json.dumps(sub['default'])}")
            lines.append(_doc(notes, inner))
        optional = "" if name in required else "?"
        lines.append(f"{inner}{_key(name)}{optional}: {written};\n")
    extra = schema.get("additionalProperties", True)
    if extra is not False:
        index = schema_type(extra, defs=defs, indent=inner, _seen=seen)
        if properties and index != "unknown":
            index = _group(
                [index, *types, *([] if required >= set(properties) else ["undefined"])], " | "
            )
        lines.append(f"{inner}[key: string]: {index};\n")
    if not lines:
        return "{}"
    return "{\n" + "".join(lines) + indent + "}"


def _pascal(name: str) -> str:
    return name[:1].upper() + name[1:]


def _operation(connector: ConnectorManifest, op: OperationManifest) -> str:
    title = _pascal(op.name)
    kind = f"{op.kind.value} operation; needs the permission `{op.permission}`."
    notes = [op.description, kind, "", f"@param args {op.arguments.get('description', '')}"]
    return _doc(notes, "      ") + (
        f"      {_key(op.name)}(args: {title}Arguments): Promise<{title}Result>;\n"
    )


def _connector(connector: ConnectorManifest, mutate_reads: MutateReads) -> str:
    out = [_doc([connector.description], "  "), f"  namespace {connector.name} {{\n"]
    for op in connector.operations:
        title = _pascal(op.name)
        out.append(_doc([f"Arguments of `ctx.{connector.name}.{op.name}`."], "    "))
        out.append(f"    type {title}Arguments = {schema_type(op.arguments, indent='    ')};\n")
        if op.result is None:
            said = f"What `ctx.{connector.name}.{op.name}` returns (not declared by the connector)."
            written = "any"
        else:
            said = f"What `ctx.{connector.name}.{op.name}` returns."
            written = schema_type(op.result, indent="    ")
        out.append(_doc([said], "    "))
        out.append(f"    type {title}Result = {written};\n")
    for phase in HandlerPhase:
        allowed = allowed_kinds(phase, mutate_reads)
        ops = [op for op in connector.operations if op.kind in allowed]
        if not ops:
            continue
        out.append(_doc([f"`ctx.{connector.name}` in {phase.value}."], "    "))
        out.append(f"    interface {_pascal(phase.value)} {{\n")
        out += [_operation(connector, op) for op in ops]
        out.append("    }\n")
    out.append("  }\n")
    return "".join(out)


_TOPIC_OPERATIONS = {
    "peek": (
        "The pending events of a subscribed topic, oldest first (at most `limit`).",
        "peek(topic: string, options?: { limit?: number }): Promise<Event[]>;",
    ),
    "getByIds": (
        "The events of a subscribed topic with these messageIds.",
        "getByIds(topic: string, ids: string[]): Promise<Event[]>;",
    ),
    "publish": (
        "Publish an event to a topic the handler publishes (deduplicated by messageId).",
        "publish(topic: string, event: PublishEvent): Promise<{ messageId: string }>;",
    ),
}

_FIXED = """\
  /** An event as a handler reads it (`ctx.peek`, `ctx.getByIds`). */
  interface Event {
    topic: string;
    messageId: string;
    title: string;
    payload: any;
    /** ISO 8601 time the event was published. */
    createdAt: string;
  }
  /** What `ctx.publish(topic, event)` takes. */
  interface PublishEvent {
    /** Stable id; a repeat publish with the same id is deduplicated (default: from the run). */
    messageId?: string;
    /** What the event represents, in the user's terms, with a stable external identifier. */
    title: string;
    /** Any JSON value. */
    payload?: any;
  }
  /** The events of one topic a consumer run reserves. */
  interface Reservation {
    topic: string;
    ids: string[];
  }
  /** What `prepare` returns: every key is optional and no other key is read. */
  interface PrepareResult {
    reservations?: Reservation[];
    /** Data for `mutate` and `next` (any JSON value). */
    data?: any;
    /** What the pending mutation does, in user terms. */
    ui?: { title?: string };
    /** ISO 8601 time at which to run this consumer again (clamped by policy). */
    wakeAt?: string;
  }
  /** The `mutationResult` argument of `next`. */
  type MutationResult =
    | { status: "applied"; /** What the connector returned. */ result: any }
    | { status: "none"; result?: undefined }
    | { status: "skipped"; result?: undefined };
  /** A handler's state: the JSON value it returned last time (undefined at first). */
  type State = any;
  /** A producer handler: reads and publishes; returns its next state. */
  type ProducerHandler = (ctx: ProducerCtx, state: State) => unknown;
  /** Reads and reserves events; what it returns is handed to `mutate` and `next`. */
  type PrepareHandler = (ctx: PrepareCtx, state: State) => PrepareResult | Promise<PrepareResult>;
  /** At most one mutation, as its last statement. */
  type MutateHandler = (ctx: MutateCtx, prepared: PrepareResult) => unknown;
  /** Publishes follow-up events; returns the consumer's next state. */
  type NextHandler = (
    ctx: NextCtx,
    prepared: PrepareResult,
    mutationResult: MutationResult,
  ) => unknown;
  /** When a producer runs: every `interval` (`"5m"`) or on a `cron` expression. */
  interface Schedule {
    interval?: string;
    cron?: string;
  }
  interface ProducerSpec {
    schedule?: Schedule;
    handler: ProducerHandler;
    publishes?: string[];
    description?: string;
  }
  interface ConsumerSpec {
    subscribe: string[];
    publishes?: string[];
    prepare: PrepareHandler;
    mutate: MutateHandler;
    next: NextHandler;
    description?: string;
  }
  interface TopicSpec {
    description?: string;
    [key: string]: unknown;
  }
  interface WorkflowSpec {
    name: string;
    description?: string;
    topics: { [topic: string]: TopicSpec };
    producers?: { [name: string]: ProducerHandler | ProducerSpec };
    consumers?: { [name: string]: ConsumerSpec };
  }
  /** What `Keep.workflow` returns: the module's default export. */
  interface Workflow {
    readonly __keepWorkflow: true;
  }
"""

_GLOBALS = """\
/** The global of every workflow script. */
declare const Keep: {
  /** Declare the workflow: `export default Keep.workflow({...})`, exactly once. */
  workflow(spec: Keep.WorkflowSpec): Keep.Workflow;
  /** A consumer: `prepare` (reads), `mutate` (one mutation), `next` (publishes). */
  consumer(spec: Keep.ConsumerSpec): Keep.ConsumerSpec;
};

interface Console {
  log(...data: any[]): void;
  info(...data: any[]): void;
  warn(...data: any[]): void;
  error(...data: any[]): void;
  debug(...data: any[]): void;
}
declare var console: Console;
"""


def declarations(manifest: Manifest, *, mutate_reads: MutateReads = "none") -> str:
    """The ``.d.ts`` of the script API over `manifest`, under the policy's `mutate_reads`.

    A global script (no import or export): ``Keep`` is a global value and namespace,
    ``Keep.<connector>.<Operation>Arguments`` the argument type of each operation, and
    ``Keep.ProducerCtx``/``PrepareCtx``/``MutateCtx``/``NextCtx`` hold only what that phase
    may call, so a script that calls a mutation in ``prepare`` does not type-check."""
    out = [
        "// Generated by `keep connectors --format typescript` from the connector manifests.\n",
        "// What a workflow script may call in each phase; do not edit.\n\n",
        "declare namespace Keep {\n",
        _FIXED,
    ]
    for connector in manifest.connectors:
        out.append(_connector(connector, mutate_reads))
    for phase in HandlerPhase:
        allowed = allowed_kinds(phase, mutate_reads)
        out.append(_doc([f"`ctx` in {phase.value}: only what the phase may call."], "  "))
        out.append(f"  interface {_CTX[phase]} {{\n")
        for connector in manifest.connectors:
            if any(op.kind in allowed for op in connector.operations):
                out.append(
                    f"    {_key(connector.name)}: {connector.name}.{_pascal(phase.value)};\n"
                )
        for name in allowed_topic_operations(phase):
            doc, signature = _TOPIC_OPERATIONS[name]
            out.append(_doc([doc], "    ") + f"    {signature}\n")
        out.append("  }\n")
    out.append("}\n\n")
    out.append(_GLOBALS)
    return "".join(out)
