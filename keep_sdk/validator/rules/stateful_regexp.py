"""stateful-regexp: a module-level RegExp with the ``g`` or ``y`` flag used with ``test``/``exec``.

What it does: warns about ``RE.test(s)`` and ``RE.exec(s)`` where ``RE`` is declared at
the top of the script (``const RE = /invoice/gi``, ``new RegExp(p, "g")``) with the
global (``g``) or sticky (``y``) flag, unless the script sets ``RE.lastIndex`` itself.

Why is this bad? A global or sticky RegExp remembers where its last match ended
(``lastIndex``) and starts the next ``test``/``exec`` there. Shared by every call,
the second item that matches is tested from the middle of its text and fails: the
script skips every second invoice, and a cursor that moved past it never sees it again.
"""

from __future__ import annotations

from collections.abc import Iterator

import tree_sitter

from keep_sdk.validator._diagnostics import Severity
from keep_sdk.validator.facts import Analysis
from keep_sdk.validator.fields import Field
from keep_sdk.validator.rule import Finding, Related, Rule, RuleMeta
from keep_sdk.validator.rules._runs import descendants
from keep_sdk.validator.rules._support import why
from keep_sdk.validator.scope import string_literal

__all__ = ["regexp_flags", "rule"]

Node = tree_sitter.Node

META = RuleMeta(
    id="stateful-regexp",
    severity=Severity.WARNING,
    description="A module-level RegExp with the `g` or `y` flag is used with `test` or `exec`.",
    rationale=why(__doc__),
    messages={
        "shared": (
            "`{name}.{method}(...)` uses the module-level RegExp `{name}` with the `{flag}` "
            "flag: its `lastIndex` carries over from one call to the next, so a later match "
            "can be missed"
        ),
    },
    hint=(
        "Drop the `{flag}` flag from `{name}` (`test` and `exec` need neither), or create "
        "the RegExp inside the function that uses it."
    ),
)


def regexp_flags(analysis: Analysis, value: Node) -> str | None:
    """The flags of a RegExp literal or ``new RegExp(pattern, "flags")``; None otherwise."""
    if value.type == "regex":
        flags = [c for c in value.named_children if c.type == "regex_flags"]
        return analysis.text(flags[0]) if flags else ""
    if value.type in ("new_expression", "call_expression"):
        callee = value.child_by_field_id(
            Field.CONSTRUCTOR if value.type == "new_expression" else Field.FUNCTION
        )
        arguments = value.child_by_field_id(Field.ARGUMENTS)
        if callee is None or analysis.text(callee) != "RegExp" or arguments is None:
            return None
        values = [c for c in arguments.named_children if c.type != "comment"]
        if len(values) < 2:
            return ""
        return string_literal(values[1], analysis.source.data)
    return None


def _module_regexps(analysis: Analysis) -> dict[str, tuple[Node, str]]:
    found: dict[str, tuple[Node, str]] = {}
    for statement in analysis.source.root.named_children:
        if statement.type == "export_statement":
            declaration = statement.child_by_field_id(Field.DECLARATION)
            statement = declaration if declaration is not None else statement
        if statement.type not in ("lexical_declaration", "variable_declaration"):
            continue
        for declarator in statement.named_children:
            if declarator.type != "variable_declarator":
                continue
            target = declarator.child_by_field_id(Field.NAME)
            value = declarator.child_by_field_id(Field.VALUE)
            if target is None or value is None or target.type != "identifier":
                continue
            flags = regexp_flags(analysis, value)
            sticky = "".join(flag for flag in (flags or "") if flag in "gy")
            if sticky:
                found[analysis.text(target)] = (declarator, sticky[0])
    return found


def check(analysis: Analysis) -> Iterator[Finding]:
    """Each ``test``/``exec`` call on a module-level global or sticky RegExp."""
    regexps = _module_regexps(analysis)
    if not regexps:
        return
    reset: set[str] = set()
    uses: list[tuple[Node, str, str]] = []
    for node in descendants(analysis.source.root):
        if node.type != "member_expression":
            continue
        obj = node.child_by_field_id(Field.OBJECT)
        prop = node.child_by_field_id(Field.PROPERTY)
        if obj is None or prop is None or obj.type != "identifier":
            continue
        name, method = analysis.text(obj), analysis.text(prop)
        if name not in regexps:
            continue
        if method == "lastIndex":
            reset.add(name)
        parent = node.parent
        is_call = parent is not None and parent.type == "call_expression"
        if is_call and method in ("test", "exec"):
            assert parent is not None
            uses.append((parent, name, method))
    for call, name, method in uses:
        if name in reset:
            continue
        declarator, flag = regexps[name]
        yield Finding(
            "shared",
            call,
            {"name": name, "method": method, "flag": flag},
            analysis.handler_at(call),
            related=(Related(declarator, f"`{name}` is declared here, with the `{flag}` flag"),),
        )


rule = Rule(META, check)
