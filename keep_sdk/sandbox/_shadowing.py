"""Where a script declares its own `Keep` at module level, hiding the global one.

Used only to explain a script that never called the global ``Keep.workflow``: the
script's own ``const Keep = …`` (or function, class, import, destructured name)
shadows the global, so the script's ``Keep.workflow({...})`` builds nothing the
sandbox can see.
"""

from __future__ import annotations

from typing import Final

import tree_sitter
import tree_sitter_javascript

__all__ = ["keep_declared_at"]

_PARSER: Final = tree_sitter.Parser(tree_sitter.Language(tree_sitter_javascript.language()))
_NAME: Final = b"Keep"
_BINDINGS: Final = frozenset({"identifier", "shorthand_property_identifier_pattern"})


def _binds_keep(node: tree_sitter.Node) -> bool:
    """Whether the binding pattern `node` introduces the name `Keep`."""
    if node.type in _BINDINGS:
        return node.text == _NAME
    if node.type == "pair_pattern":
        value = node.child_by_field_name("value")
        return value is not None and _binds_keep(value)
    if node.type == "assignment_pattern":
        left = node.child_by_field_name("left")
        return left is not None and _binds_keep(left)
    return any(_binds_keep(child) for child in node.named_children)


def _declares_keep(statement: tree_sitter.Node) -> bool:
    kind = statement.type
    if kind == "export_statement":
        declaration = statement.child_by_field_name("declaration")
        return declaration is not None and _declares_keep(declaration)
    if kind in ("function_declaration", "generator_function_declaration", "class_declaration"):
        name = statement.child_by_field_name("name")
        return name is not None and name.text == _NAME
    if kind in ("lexical_declaration", "variable_declaration"):
        for declarator in statement.named_children:
            name = declarator.child_by_field_name("name")
            if name is not None and _binds_keep(name):
                return True
        return False
    if kind == "import_statement":
        for node in _walk(statement):
            if node.type == "import_specifier":
                bound = node.child_by_field_name("alias") or node.child_by_field_name("name")
                if bound is not None and bound.text == _NAME:
                    return True
            elif node.type in ("import_clause", "namespace_import") and any(
                c.type == "identifier" and c.text == _NAME for c in node.named_children
            ):
                return True
    return False


def _walk(node: tree_sitter.Node) -> list[tree_sitter.Node]:
    found, stack = [], [node]
    while stack:
        current = stack.pop()
        found.append(current)
        stack.extend(current.named_children)
    return found


def keep_declared_at(source: str) -> int | None:
    """The 1-based line of the first module-level declaration of `Keep` in `source`, or
    None when the script declares none."""
    tree = _PARSER.parse(source.encode("utf-8", "surrogatepass"))
    for statement in tree.root_node.named_children:
        if _declares_keep(statement):
            return statement.start_point.row + 1
    return None
