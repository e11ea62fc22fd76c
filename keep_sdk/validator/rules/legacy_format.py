"""legacy-format: a script in the original product's format (``const workflow = {...}``, tools).

What it does: flags the original product's declaration (a top-level
``const workflow = {...}`` object with ``producers`` or ``consumers``, in a
script without a readable ``export default Keep.workflow``) and, anywhere in the script, its tool
globals (``Topics.peek``, ``Topics.publish``, ``Gmail.api``,
``GoogleSheets.api``... and the ``__state__``-style phase globals), each with
what replaces it in this SDK, and handlers whose first parameter is
``state``, ``prepared`` or ``mutationResult`` (the old signatures without
``ctx``).

Why is this bad? This SDK loads only ``export default Keep.workflow({...})``,
calls handlers with ``ctx`` first and offers tools only through ``ctx``: a
script in the old format does not deploy, and a half-converted one fails with
``ReferenceError: Gmail is not defined`` when the line runs.
"""

from __future__ import annotations

from collections.abc import Iterator

import tree_sitter

from keep_sdk.model import HandlerPhase
from keep_sdk.validator._diagnostics import Severity
from keep_sdk.validator.facts import Analysis
from keep_sdk.validator.fields import Field
from keep_sdk.validator.globals_scan import declared_in_script
from keep_sdk.validator.rule import Finding, Rule, RuleMeta
from keep_sdk.validator.rules._support import phase_name, why

__all__ = ["LEGACY_GLOBALS", "rule"]

Node = tree_sitter.Node

_REPLACEMENTS = {
    "Topics.peek": "use `ctx.peek(topic, { limit })` in `prepare`",
    "Topics.getByIds": "use `ctx.getByIds(topic, ids)` in `prepare`",
    "Topics.publish": (
        "use `ctx.publish(topic, { messageId, title, payload })` (one topic per call)"
    ),
    "Topics.registerInput": (
        "there is no `registerInput`: publish the input as an event with a stable `messageId`"
    ),
    "Gmail": "call the mail connector through ctx: `ctx.gmail.search/getById/send`",
    "GoogleSheets": "call the sheets connector through ctx: `ctx.sheets.listRows/appendRow/...`",
    "__state__": "read the handler's `state` parameter: `(ctx, state)`",
    "__prepared__": "read the handler's `prepared` parameter: `(ctx, prepared)`",
    "__mutationResult__": "read `next`'s `mutationResult` parameter",
}
_SECTIONS = frozenset({"producers", "consumers"})
_OLD_FIRST_PARAMETERS = frozenset({"state", "prepared", "mutationResult"})
_PARAMETERS = {
    HandlerPhase.PRODUCER: "(ctx, state)",
    HandlerPhase.PREPARE: "(ctx, state)",
    HandlerPhase.MUTATE: "(ctx, prepared)",
    HandlerPhase.NEXT: "(ctx, prepared, mutationResult)",
}
_OTHER = (
    "call a connector configured in keep.toml through ctx (`ctx.<connector>.<operation>`); "
    "`keep connectors` lists them"
)
LEGACY_GLOBALS = frozenset(
    {
        "Topics",
        "Gmail",
        "GoogleSheets",
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
        "getDocs",
        "__state__",
        "__prepared__",
        "__mutationResult__",
    }
)
"""The original product's tool and phase globals; `forbidden-global` leaves them to this rule."""
_ENCODED = frozenset(name.encode() for name in LEGACY_GLOBALS)
_WORD_BYTES = frozenset(b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_$")

META = RuleMeta(
    id="legacy-format",
    severity=Severity.ERROR,
    description="The script is written in the original product's format.",
    rationale=why(__doc__),
    messages={
        "declaration": (
            "`{name} = {{...}}` is the original product's workflow format; this SDK loads "
            "`export default Keep.workflow({{...}})` with handlers that take `ctx` first"
        ),
        "tool": "`{name}` is a tool global of the original product's format: {replacement}",
        "signature": (
            "this handler takes `{name}` first, as in the original product's format; here "
            "{phase} receives `{parameters}`, so `{name}` would be `ctx`"
        ),
    },
    hint=(
        "Rewrite the declaration as `export default Keep.workflow({{ name, topics, producers: "
        "{{ p: {{ schedule, handler: async (ctx, state) => ... }} }}, consumers: {{ c: "
        "Keep.consumer({{ subscribe, async prepare(ctx, state) {{...}}, async mutate(ctx, "
        "prepared) {{...}}, async next(ctx, prepared, mutationResult) {{...}} }}) }} }})`, "
        "and call tools through ctx: `Topics.peek({{topic, limit}})` → `ctx.peek(topic, "
        "{{limit}})`, `Topics.publish({{topic, event}})` → `ctx.publish(topic, event)`, "
        "`Gmail.api(...)` → `ctx.gmail.<operation>(...)`. `keep migrate FILE` does this "
        "rewrite and marks what it cannot map with `// TODO(migrate)`."
    ),
    hints={
        "tool": "Replace it: {replacement}.",
        "signature": "Add `ctx` as the first parameter: `{parameters}`.",
    },
)


def check(analysis: Analysis) -> Iterator[Finding]:
    """The old declaration and every old tool global the script uses (none on syntax errors)."""
    if analysis.syntax:
        return
    root = analysis.source.root
    statements = root.named_children if analysis.manifest is None else []
    for statement in statements:
        if statement.type not in ("lexical_declaration", "variable_declaration"):
            continue
        for declarator in statement.named_children:
            if declarator.type != "variable_declarator":
                continue
            name = declarator.child_by_field_id(Field.NAME)
            value = declarator.child_by_field_id(Field.VALUE)
            if (
                name is not None
                and value is not None
                and value.type == "object"
                and analysis.manifest is None
                and _declares_handlers(analysis, value)
            ):
                kind = statement.child(0)
                keyword = analysis.text(kind) if kind is not None else "const"
                arguments = {"name": f"{keyword} {analysis.text(name)}"}
                yield Finding("declaration", declarator, arguments)
    yield from _tools(analysis)
    yield from _signatures(analysis)


def _signatures(analysis: Analysis) -> Iterator[Finding]:
    for handler in analysis.handlers:
        node = handler.node
        first = node.child_by_field_id(Field.PARAMETER)
        if first is None:
            parameters = node.child_by_field_id(Field.PARAMETERS)
            first = (
                parameters.named_child(0)
                if parameters is not None and parameters.named_child_count
                else None
            )
        if first is None or first.type != "identifier":
            continue
        name = analysis.text(first)
        if name in _OLD_FIRST_PARAMETERS:
            arguments = {
                "name": name,
                "phase": phase_name(handler.phase),
                "parameters": _PARAMETERS[handler.phase],
            }
            yield Finding("signature", first, arguments, handler)


def _declares_handlers(analysis: Analysis, literal: Node) -> bool:
    """True for an object literal with a ``producers`` or ``consumers`` key."""
    for entry in literal.named_children:
        key = entry.child_by_field_id(Field.KEY) if entry.type == "pair" else None
        if key is not None and analysis.text(key).strip("\"'") in _SECTIONS:
            return True
    return False


def _tools(analysis: Analysis) -> Iterator[Finding]:
    data = analysis.source.data
    present = _ENCODED.intersection(analysis.source.word_list)
    if not present:
        return
    root = analysis.source.root
    size = len(data)
    for word in sorted(present):
        name = word.decode()
        if declared_in_script(analysis, name):
            continue
        at = data.find(word)
        while at != -1:
            end = at + len(word)
            standalone = (not at or data[at - 1] not in _WORD_BYTES) and (
                end >= size or data[end] not in _WORD_BYTES
            )
            node = root.descendant_for_byte_range(at, end) if standalone else None
            if node is not None and node.type == "identifier" and node.start_byte == at:
                path = _path(analysis, node)
                replacement = _REPLACEMENTS.get(path) or _REPLACEMENTS.get(name) or _OTHER
                arguments = {"name": path, "replacement": replacement}
                yield Finding("tool", node.parent or node, arguments, analysis.handler_at(node))
            at = data.find(word, end)


def _path(analysis: Analysis, node: Node) -> str:
    """``Topics.peek`` for the identifier ``Topics`` of ``Topics.peek(...)``, else its name."""
    parent = node.parent
    name = analysis.text(node)
    if parent is not None and parent.type == "member_expression":
        prop = parent.child_by_field_id(Field.PROPERTY)
        obj = parent.child_by_field_id(Field.OBJECT)
        if prop is not None and obj is not None and obj.id == node.id:
            return f"{name}.{analysis.text(prop)}"
    return name


rule = Rule(META, check)
