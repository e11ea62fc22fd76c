"""Returns marked in the script, so a returned value is located at its ``return``.

The engine does not say which ``return`` produced a value. Before compiling, every
``return EXPR`` (and every arrow function's expression body) is rewritten to
``return __keepReturn_<nonce>(LINE, COLUMN, (EXPR))`` where LINE and COLUMN are where
the ``return`` (or the body) is in the script as written; the prelude's function of that
name (a frozen, non-writable global) remembers that position for the value and returns
it unchanged. The nonce is drawn at random once per process, so the script cannot name
the function, declare a binding that shadows it or make the rewrite call its own code
(the validator also refuses any name starting with ``__keep``).

Lines never move (nothing inserted contains a line break); columns after an insertion
on the same line do, and `Marked.original_column` / `Marked.marked_column` translate
them (columns are 1-based UTF-8 byte offsets, as the engine counts them).
"""

from __future__ import annotations

import bisect
import secrets
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Final

import tree_sitter
import tree_sitter_javascript

from keep_sdk.contract.globals import RETURN_MARKER

__all__ = ["MARKER", "Marked", "mark_returns"]

MARKER: Final = f"{RETURN_MARKER}_{secrets.token_hex(16)}"
"""The global the prelude defines (named in its configuration); no script can spell it."""

_PARSER: Final = tree_sitter.Parser(tree_sitter.Language(tree_sitter_javascript.language()))


@dataclass(frozen=True)
class Marked:
    """The script with its returns marked, and where text was inserted."""

    text: str
    inserts: dict[int, tuple[tuple[int, int], ...]] = field(default_factory=dict)
    """1-based line → (original 1-based column of the insertion, bytes inserted), in order."""

    def original_column(self, line: int, column: int) -> int:
        """The column in the script as written of `column` on `line` of the marked text."""
        shift = 0
        for at, size in self.inserts.get(line, ()):
            if column <= at + shift:
                break
            if column < at + shift + size:
                return at
            shift += size
        return column - shift

    def marked_column(self, line: int, column: int) -> int:
        """The column in the marked text of `column` on `line` of the script as written."""
        inserts = self.inserts.get(line, ())
        index = bisect.bisect_right([at for at, _ in inserts], column - 1)
        return column + sum(size for _, size in inserts[:index])


def _targets(root: tree_sitter.Node) -> list[tuple[tree_sitter.Node, tree_sitter.Point]]:
    """Every returned expression with where its return is, in source order."""
    found: list[tuple[tree_sitter.Node, tree_sitter.Point]] = []
    stack = [root]
    while stack:
        node = stack.pop()
        if node.type == "return_statement":
            value = next((c for c in node.named_children if c.type != "comment"), None)
            if value is not None:
                found.append((value, node.start_point))
        elif node.type == "arrow_function":
            body = node.child_by_field_name("body")
            if body is not None and body.type != "statement_block":
                found.append((body, body.start_point))
        stack.extend(reversed(node.children))
    return sorted(found, key=lambda item: item[0].start_byte)


@lru_cache(maxsize=64)
def mark_returns(source: str) -> Marked:
    """`source` with its returns marked (the same text when it has none, or cannot be parsed)."""
    data = source.encode("utf-8", "surrogatepass")
    tree = _PARSER.parse(data)
    if tree.root_node.has_error:
        return Marked(text=source)
    edits: list[tuple[int, bytes, int, int]] = []
    for value, where in _targets(tree.root_node):
        prefix = f"{MARKER}({where.row + 1},{where.column + 1},(".encode()
        edits.append((value.start_byte, prefix, value.start_point.row, value.start_point.column))
        edits.append((value.end_byte, b"))", value.end_point.row, value.end_point.column))
    if not edits:
        return Marked(text=source)
    edits.sort(key=lambda edit: edit[0])
    pieces: list[bytes] = []
    inserts: dict[int, list[tuple[int, int]]] = {}
    last = 0
    for offset, text, row, column in edits:
        pieces.append(data[last:offset])
        pieces.append(text)
        inserts.setdefault(row + 1, []).append((column + 1, len(text)))
        last = offset
    pieces.append(data[last:])
    marked = b"".join(pieces).decode("utf-8", "surrogatepass")
    return Marked(text=marked, inserts={line: tuple(at) for line, at in inserts.items()})
