"""Whether a schedule's ``cron`` text is a valid five-field expression, without croniter's cost.

``croniter.is_valid`` builds a full iterator (100 to 200 µs, as much as parsing a
small script). The forms LLM-written scripts use (``*``, numbers, ranges, lists
and steps within each field's bounds, single spaces) are checked here; anything
else (names such as ``MON``, ``7`` for Sunday, ``L``, ``#``, unusual spacing)
is left to croniter, so the answer is always croniter's.
"""

from __future__ import annotations

import re

from croniter import croniter

__all__ = ["is_valid_cron"]

_BOUNDS = ((0, 59), (0, 23), (1, 31), (1, 12), (0, 6))
_ITEM = re.compile(r"(?:\*|([0-9]{1,2})(?:-([0-9]{1,2}))?)(?:/([0-9]{1,2}))?")


def is_valid_cron(text: str) -> bool:
    """True when `text` is a five-field cron expression croniter accepts."""
    parts = text.split(" ")
    if len(parts) == 5 and all(
        _plain(part, low, high) for part, (low, high) in zip(parts, _BOUNDS, strict=True)
    ):
        return True
    return len(text.split()) == 5 and bool(croniter.is_valid(text))


def _plain(field: str, low: int, high: int) -> bool:
    """True when every item of `field` is `*`, `N`, `N-M`, `*/S` or `N-M/S` within bounds."""
    for item in field.split(","):
        match = _ITEM.fullmatch(item)
        if match is None:
            return False
        start, end, step = match.groups()
        if start is not None:
            if not low <= int(start) <= high:
                return False
            if end is not None and not int(start) <= int(end) <= high:
                return False
            if end is None and step is not None:
                return False
        if step is not None and not 1 <= int(step) <= high - low:
            return False
    return True
