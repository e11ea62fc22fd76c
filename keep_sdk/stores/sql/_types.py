"""Column types that read and write the same on SQLite and PostgreSQL."""

from __future__ import annotations

import datetime as dt
import json
from typing import Any

from sqlalchemy import Dialect, String, Text
from sqlalchemy.types import TypeDecorator

__all__ = ["JsonText", "UtcTimestamp"]

_ENCODER = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False)
"""What ``json.dumps(value, separators=(",", ":"), ensure_ascii=False)`` builds on every
call (a call with arguments does not reuse the module's encoder)."""


class UtcTimestamp(TypeDecorator[dt.datetime]):
    """An aware datetime stored as fixed-width UTC text (``2026-11-22T08:00:00.000000Z``).

    Fixed width makes text order time order, so comparisons and indexes work
    alike on every database: the year has four digits (``0999``) as the ISO format
    writes it, where C's ``strftime`` (``%Y``) writes ``999``.
    """

    impl = String(27)
    cache_ok = True

    def process_bind_param(self, value: dt.datetime | None, dialect: Dialect) -> str | None:
        if value is None:
            return None
        if value.tzinfo is None:
            raise ValueError(f"naive datetime {value!r}: stores keep aware UTC times only")
        return value.astimezone(dt.UTC).isoformat(timespec="microseconds")[:-6] + "Z"

    def process_result_value(self, value: str | None, dialect: Dialect) -> dt.datetime | None:
        if value is None:
            return None
        return dt.datetime.fromisoformat(value)


class JsonText(TypeDecorator[Any]):
    """A JSON document stored as compact text; Python None is stored as JSON ``null``."""

    impl = Text
    cache_ok = True

    def process_bind_param(self, value: Any, dialect: Dialect) -> str | None:
        return _ENCODER.encode(value)

    def process_result_value(self, value: str | None, dialect: Dialect) -> Any:
        return None if value is None else json.loads(value)
