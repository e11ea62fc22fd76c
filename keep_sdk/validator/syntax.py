"""Syntax errors: tree-sitter's ERROR and MISSING nodes, then QuickJS early errors.

tree-sitter accepts some scripts that no engine would load (a ``let`` declared
twice, ``break`` outside a loop, an octal literal in strict code). Those are
found by compiling the script with QuickJS as a module whose first statement
is ``throw null;``: compiling parses the whole module and reports every early
error, and evaluation stops at that first statement, so none of the script
ever runs. Compilation happens in a small per-thread context with memory
and time limits and the same JS stack size as the runtime sandbox (the host
policy's ``sandbox.stack_bytes``), so the validator and the runtime agree on
how deeply nested a script may be and still compile.
"""

from __future__ import annotations

import re
import threading

import quickjs
import tree_sitter

from keep_sdk.model import SandboxLimits
from keep_sdk.validator.facts import SyntaxProblem
from keep_sdk.validator.source import SourceText

__all__ = ["engine_errors", "parser_errors"]

_GUARD = "throw null;"
_MEMORY_BYTES = 64 * 1024 * 1024
_STACK_BYTES = SandboxLimits().stack_bytes
_TIME_LIMIT_S = 2.0
_MIN_STACK_BYTES = 16 * 1024
_CONTEXT_REUSES = 200
_MAX_PARSER_ERRORS = 50
_POSITION = re.compile(r"\n\s+at <input>:(\d+):(\d+)")
_UNPAIRED_SURROGATE = re.compile("[\ud800-\udfff]")


_FENCE = re.compile(rb"^[ \t]*`{3,}[ \t]*[\w+#.-]*[ \t]*\r?$", re.MULTILINE)


def parser_errors(source: SourceText) -> list[SyntaxProblem]:
    """Every ERROR and MISSING node of the tree (at most 50), in source order.

    When the script holds Markdown code fence lines (outside comments), those
    lines are the problems reported: the parser's errors are their echo, often
    far from them (a fence reads as a template literal).
    """
    fences = _fences(source)
    if fences:
        return fences
    root = source.root
    if not root.has_error:
        return []
    problems: list[SyntaxProblem] = []
    stack = [root]
    while stack and len(problems) < _MAX_PARSER_ERRORS:
        node = stack.pop()
        if node.is_missing:
            problems.append(_missing(source, node))
        elif node.is_error:
            problems.append(_unexpected(source, node))
        elif node.has_error:
            stack.extend(reversed(node.children))
    return problems


def _fences(source: SourceText) -> list[SyntaxProblem]:
    data = source.data
    if b"```" not in data:
        return []
    root = source.root
    problems: list[SyntaxProblem] = []
    for match in _FENCE.finditer(data):
        text = match.group().strip()
        start = match.start() + (len(match.group()) - len(match.group().lstrip()))
        node = root.descendant_for_byte_range(start, start + 1)
        if node is not None and node.type == "comment":
            continue
        problems.append(
            SyntaxProblem(
                start_byte=start,
                end_byte=start + len(text),
                message=text.decode("utf-8", "replace"),
                source="fence",
            )
        )
    return problems[:_MAX_PARSER_ERRORS]


def _missing(source: SourceText, node: tree_sitter.Node) -> SyntaxProblem:
    token = node.type
    what = f"`{token}`" if not token.isidentifier() or token in {"in", "of"} else f"a {token}"
    return SyntaxProblem(
        start_byte=node.start_byte,
        end_byte=node.end_byte,
        message=f"missing {what} here",
    )


def _unexpected(source: SourceText, node: tree_sitter.Node) -> SyntaxProblem:
    text = source.node_text(node).strip()
    if not text:
        return SyntaxProblem(node.start_byte, node.end_byte, "unexpected end of the script")
    first_line = text.splitlines()[0]
    shown = first_line if len(first_line) <= 40 else first_line[:37] + "..."
    return SyntaxProblem(
        start_byte=node.start_byte,
        end_byte=node.end_byte,
        message=f"cannot parse `{shown}`",
    )


class _Compiler(threading.local):
    def __init__(self) -> None:
        self.context: quickjs.Context | None = None
        self.uses = 0
        self.stack_bytes = _STACK_BYTES

    def compile(self, text: str, stack_bytes: int = _STACK_BYTES) -> str | None:
        stack_bytes = _engine_stack(stack_bytes)
        if self.context is None or self.uses >= _CONTEXT_REUSES or stack_bytes != self.stack_bytes:
            self.context = quickjs.Context()
            self.context.set_memory_limit(_MEMORY_BYTES)
            self.context.set_max_stack_size(stack_bytes)
            self.stack_bytes = stack_bytes
            self.context.set_time_limit(_TIME_LIMIT_S)
            self.uses = 0
        self.uses += 1
        try:
            self.context.module(_GUARD + text)
        except quickjs.StackOverflow:
            self.context = None
            return "RangeError: the script is nested too deeply for the engine to compile"
        except quickjs.JSException as exc:
            message = str(exc)
            if message.startswith("SyntaxError:"):
                return message
            if "out of memory" in message:
                self.context = None
                return "InternalError: the script is too large for the engine to compile"
            return None
        return None


_compiler = _Compiler()


def _engine_stack(requested: int) -> int:
    """`requested`, capped as the sandbox caps it where the thread's stack size is known.

    The sandbox never lets the engine use more than a quarter of the thread's C
    stack; ``threading.stack_size()`` is that size for threads started with one set.
    """
    thread_stack = threading.stack_size()
    if thread_stack:
        requested = min(requested, thread_stack // 4)
    return max(_MIN_STACK_BYTES, requested)


def engine_errors(source: SourceText, stack_bytes: int = _STACK_BYTES) -> list[SyntaxProblem]:
    """Early errors QuickJS reports for a script tree-sitter parsed without error.

    The compile runs with a JS stack of `stack_bytes` (the runtime sandbox's
    ``SandboxLimits.stack_bytes``): a script nested too deeply for it is a
    syntax error here as it would be when the sandbox loads it.
    Characters the engine binding cannot take (NUL, unpaired surrogates) are
    reported instead of compiling.
    """
    text = source.text
    if "\x00" in text:
        at = source.data.index(b"\x00")
        return [
            SyntaxProblem(
                at,
                at + 1,
                "the script contains a NUL character (U+0000), which the engine cannot load",
                source="engine",
            )
        ]
    surrogate = None if source.ascii else _UNPAIRED_SURROGATE.search(text)
    if surrogate is not None:
        at = len(text[: surrogate.start()].encode("utf-8", "surrogatepass"))
        return [
            SyntaxProblem(
                at, at + 3, "the script contains an unpaired UTF-16 surrogate", source="engine"
            )
        ]
    if text.startswith("#!"):
        newline = text.find("\n")
        hashbang = len(text) if newline == -1 else newline
        text = "//" + text[2:hashbang] + text[hashbang:]
    message = _compiler.compile(text, stack_bytes)
    if message is None:
        return []
    head, _, _ = message.partition("\n")
    kind, _, detail = head.partition(": ")
    position = _POSITION.search(message)
    if position is None:
        start, end = _culprit_regex(source, stack_bytes) or (0, 0)
    else:
        line, column = int(position.group(1)), int(position.group(2))
        if line == 1:
            column -= len(_GUARD)
        start, end = _token_before(source, source.byte_offset(line, column))
    return [SyntaxProblem(start, end, detail or kind, source="engine")]


def _culprit_regex(source: SourceText, stack_bytes: int) -> tuple[int, int] | None:
    """The first regular expression literal the engine rejects (its errors carry no position)."""
    stack = [source.root]
    while stack:
        node = stack.pop()
        if node.type == "regex":
            if _compiler.compile(f"({source.node_text(node)});", stack_bytes) is not None:
                return node.start_byte, node.end_byte
            continue
        stack.extend(reversed(node.children))
    return None


def _token_before(source: SourceText, offset: int) -> tuple[int, int]:
    """The leaf token ending at or just before `offset` (QuickJS points after the culprit)."""
    root = source.root
    data = source.data
    probe = offset
    while probe > 0 and data[probe - 1 : probe] in (b" ", b"\t"):
        probe -= 1
    leaf = root.descendant_for_byte_range(max(probe - 1, 0), max(probe - 1, 0))
    if leaf is None or leaf.end_byte > offset or leaf.type == "program":
        leaf = root.descendant_for_byte_range(offset, offset)
    if leaf is None or leaf.type == "program":
        return offset, offset
    return leaf.start_byte, leaf.end_byte
