"""Gmail search syntax → the query ``ctx.gmail.search`` takes.

Here a query is words that must each appear (case-insensitively) in a message's
from, to, subject or body, and ``from:x`` restricts the sender (see the gmail
double). Gmail's own operators either translate to that or cannot be kept.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

__all__ = ["GmailQuery", "translate_gmail_query"]

_TERM = re.compile(r'(-)?(?:([A-Za-z_]+):)?("[^"]*"|\S+)')
_KEPT = frozenset({"from"})
_WIDENED = frozenset({"subject", "to", "cc", "body"})


@dataclass(frozen=True)
class GmailQuery:
    """The translated `query`; `widened` are terms kept as plain words (they now match in
    any field), `lost` are terms that have no equivalent and were left out."""

    query: str
    widened: tuple[str, ...]
    lost: tuple[str, ...]


def translate_gmail_query(original: str) -> GmailQuery:
    """Translate Gmail search text: plain words and ``from:`` stay, ``subject:x`` (and
    ``to:``/``cc:``) become the word ``x``, a quoted phrase becomes its words; negation,
    ``OR``, ``is:``, ``label:``, ``has:``, dates and every other operator are lost."""
    kept: list[str] = []
    widened: list[str] = []
    lost: list[str] = []
    for match in _TERM.finditer(original):
        negated, operator, value = match.group(1), match.group(2), match.group(3)
        term = match.group(0)
        words = value.strip('"').split() if value.startswith('"') else [value]
        if (
            negated
            or value in ("OR", "AND", "{", "}")
            or (operator and operator.lower() not in (_KEPT | _WIDENED))
        ):
            lost.append(term)
            continue
        if operator and operator.lower() in _KEPT:
            kept.extend(f"{operator.lower()}:{word}" for word in words)
            continue
        if operator or value.startswith('"'):
            widened.append(term)
        kept.extend(words)
    return GmailQuery(" ".join(kept), tuple(widened), tuple(lost))
