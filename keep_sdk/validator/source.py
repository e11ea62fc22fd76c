"""A script's text, its tree-sitter tree, and conversions between byte offsets and positions."""

from __future__ import annotations

import bisect
import re
import threading
from dataclasses import dataclass
from functools import cached_property

import tree_sitter
import tree_sitter_javascript

from keep_sdk.contract.workflow import Span

__all__ = ["JAVASCRIPT", "SourceText", "encode", "parse_tree", "words"]

JAVASCRIPT = tree_sitter.Language(tree_sitter_javascript.language())
"""The tree-sitter JavaScript grammar every part of the validator parses with."""

_local = threading.local()

_WORD_BYTES = frozenset(b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_$")
_WORDS_ONLY = bytes(byte if byte in _WORD_BYTES else 0x20 for byte in range(256))


def words(data: bytes) -> list[bytes]:
    """The runs of ASCII identifier characters (letters, digits, ``_``, ``$``) in `data`."""
    return data.translate(_WORDS_ONLY).split()


def parse_tree(data: bytes) -> tree_sitter.Tree:
    """Parse UTF-8 `data` with a parser owned by the calling thread."""
    parser = getattr(_local, "parser", None)
    if parser is None:
        parser = _local.parser = tree_sitter.Parser(JAVASCRIPT)
    return parser.parse(data)


_SURROGATE = re.compile("[\ud800-\udfff]")
_CONTINUATION = re.compile(b"[\x80-\xbf]")


def encode(text: str) -> bytes:
    """`text` as the UTF-8 bytes tree-sitter parses: each unpaired surrogate becomes U+FFFD.

    Both are three bytes and one code point, so byte offsets and code-point
    offsets in the result are those of `text`, and the bytes are always valid
    UTF-8: any slice between node boundaries decodes.
    """
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError:
        return _SURROGATE.sub("\ufffd", text).encode("utf-8")


@dataclass(frozen=True, eq=False)
class SourceText:
    """A script as text and as UTF-8 bytes, with its parsed tree.

    `data` is what tree-sitter saw: the text encoded as UTF-8 by `encode`
    (unpaired surrogates as U+FFFD), so any Python string can be parsed and
    the offsets of `data` map to the code points of `text` one to one.
    Every conversion from a byte offset accepts any integer: an offset inside
    a character counts as that character's start, one outside the data is clamped.
    """

    text: str
    data: bytes
    tree: tree_sitter.Tree
    ascii: bool = False
    """True when every character is ASCII (byte offsets are then character offsets)."""

    @classmethod
    def parse(cls, text: str) -> SourceText:
        """Encode and parse `text`."""
        data = encode(text)
        return cls(text=text, data=data, tree=parse_tree(data), ascii=len(data) == len(text))

    @property
    def root(self) -> tree_sitter.Node:
        """The ``program`` node."""
        return self.tree.root_node

    @cached_property
    def _line_starts(self) -> list[int]:
        starts = [0]
        find = self.data.find
        at = find(b"\n")
        while at != -1:
            starts.append(at + 1)
            at = find(b"\n", at + 1)
        return starts

    @cached_property
    def _continuations(self) -> list[int]:
        """The offsets of UTF-8 continuation bytes, in order (none for ASCII)."""
        return [match.start() for match in _CONTINUATION.finditer(self.data)]

    @cached_property
    def word_list(self) -> list[bytes]:
        """The runs of identifier characters in the script, in order (see `words`)."""
        return words(self.data)

    @cached_property
    def lines(self) -> list[str]:
        """The lines of the text, without their line ends."""
        return self.text.split("\n")

    def node_text(self, node: tree_sitter.Node) -> str:
        """The text of `node`."""
        return self.data[node.start_byte : node.end_byte].decode("utf-8", "replace")

    def _boundary(self, byte_offset: int) -> int:
        """`byte_offset` clamped to the data and moved back to the start of its character."""
        byte_offset = max(0, min(byte_offset, len(self.data)))
        data = self.data
        while 0 < byte_offset < len(data) and 0x80 <= data[byte_offset] < 0xC0:
            byte_offset -= 1
        return byte_offset

    def char_offset(self, byte_offset: int) -> int:
        """The `str` index of the character at `byte_offset` (O(log n))."""
        if self.ascii:
            return max(0, min(byte_offset, len(self.data)))
        byte_offset = self._boundary(byte_offset)
        return byte_offset - bisect.bisect_left(self._continuations, byte_offset)

    def position(self, byte_offset: int) -> tuple[int, int]:
        """1-based (line, column) of `byte_offset`, the column in code points (O(log n))."""
        byte_offset = max(0, min(byte_offset, len(self.data)))
        row = bisect.bisect_right(self._line_starts, byte_offset) - 1
        start = self._line_starts[row]
        if self.ascii:
            return row + 1, byte_offset - start + 1
        return row + 1, self.char_offset(byte_offset) - self.char_offset(start) + 1

    def byte_offset(self, line: int, column: int) -> int:
        """The byte offset of 1-based `line` and code-point `column` (clamped to the text)."""
        row = max(0, min(line - 1, len(self._line_starts) - 1))
        start = self._line_starts[row]
        end = self._line_starts[row + 1] - 1 if row + 1 < len(self._line_starts) else len(self.data)
        if self.ascii:
            return min(start + max(column - 1, 0), end)
        prefix = self.data[start:end].decode("utf-8")[: max(column - 1, 0)]
        return start + len(prefix.encode("utf-8"))

    def span(self, start_byte: int, end_byte: int) -> Span:
        """The `Span` of the bytes from `start_byte` to `end_byte`."""
        start_line, start_column = self.position(start_byte)
        end_line, end_column = self.position(max(end_byte, start_byte))
        return Span(
            start_line=start_line,
            start_column=start_column,
            end_line=end_line,
            end_column=end_column,
            start_offset=self.char_offset(start_byte),
            end_offset=self.char_offset(max(end_byte, start_byte)),
        )

    def node_span(self, node: tree_sitter.Node) -> Span:
        """The `Span` of `node`."""
        if not self.ascii:
            return self.span(node.start_byte, node.end_byte)
        start_row, start_column = node.start_point
        end_row, end_column = node.end_point
        return Span(
            start_line=start_row + 1,
            start_column=start_column + 1,
            end_line=end_row + 1,
            end_column=end_column + 1,
            start_offset=node.start_byte,
            end_offset=node.end_byte,
        )

    def node_position(self, node: tree_sitter.Node, *, end: bool = False) -> tuple[int, int]:
        """1-based (line, column) where `node` starts (or ends, with `end`)."""
        if not self.ascii:
            return self.position(node.end_byte if end else node.start_byte)
        row, column = node.end_point if end else node.start_point
        return row + 1, column + 1
