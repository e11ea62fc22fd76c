"""Outside text made safe to show a person: every control character visible as an escape.

Event titles (often email subjects), script output, connector errors and payloads
reach a terminal and a browser. `visible` is the one rule both the CLI and the
console apply: C0 and C1 controls, DEL, the line and paragraph separators and every
bidirectional override, embedding, isolate and mark are replaced by their escape
(``\\x1b``, ``\\u202e``), so no escape sequence reaches a terminal and no
right-to-left override reorders what a person reads. Every other character is kept
as it is, in order.
"""

from __future__ import annotations

__all__ = ["HIDDEN", "visible"]

_BIDI = frozenset({0x061C, 0x200E, 0x200F, *range(0x202A, 0x202F), *range(0x2066, 0x206A)})
"""Arabic letter mark, LRM/RLM, the embeddings and overrides, the isolates."""

HIDDEN = frozenset({*range(0x20), *range(0x7F, 0xA0), 0x2028, 0x2029, *_BIDI})
"""Code points `visible` replaces: controls, separators and bidi formatting."""


def _escape(code: int) -> str:
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def visible(text: str) -> str:
    """`text` with each character of `HIDDEN` shown as its escape; unchanged when it
    has none (the common case costs one scan)."""
    if not any(ord(c) in HIDDEN for c in text):
        return text
    return "".join(_escape(ord(c)) if ord(c) in HIDDEN else c for c in text)
