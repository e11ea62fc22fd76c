"""What a check found: `Mismatch`, and comparing expected values with actual ones."""

from __future__ import annotations

import difflib
import json
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, JsonValue
from pydantic.alias_generators import to_camel

__all__ = ["Mismatch", "diff", "is_subset", "narrow"]


class Mismatch(BaseModel):
    """One expectation that did not hold (or a step that went wrong): where, what, the
    expected and actual values, and a diff."""

    model_config = ConfigDict(
        alias_generator=to_camel, populate_by_name=True, frozen=True, extra="forbid"
    )

    what: str = Field(
        description="mutations, publishes, runs, state.<handler>, events.<topic>, ..., or "
        "error (a step went wrong)."
    )
    expected: JsonValue = None
    actual: JsonValue = None
    diff: str = Field(default="", description="A unified diff of the two, as JSON.")
    where: str = Field(default="", description="`end state` or `step N`.")
    summary: str = Field(default="", description="One line: what was expected and found.")

    @classmethod
    def compare(cls, where: str, what: str, expected: Any, actual: Any) -> Mismatch:
        """A mismatch of two values, with their diff."""
        return cls(
            what=what,
            expected=expected,
            actual=actual,
            diff=diff(expected, actual),
            where=where,
            summary=f"{what}: expected {expected!r}, found {actual!r}",
        )

    @classmethod
    def note(cls, where: str, text: str) -> Mismatch:
        """A step that went wrong, said in `text`."""
        return cls(what="error", actual=text, diff=text, where=where, summary=text)

    def line(self) -> str:
        """``where: summary``."""
        return f"{self.where}: {self.summary}" if self.where else self.summary


def is_subset(expected: Any, actual: Any) -> bool:
    """Whether `actual` has everything `expected` has: objects by their given keys
    (recursively), arrays element by element with the same length, scalars equal."""
    if isinstance(expected, dict):
        return isinstance(actual, dict) and all(
            key in actual and is_subset(value, actual[key]) for key, value in expected.items()
        )
    if isinstance(expected, list):
        return (
            isinstance(actual, list)
            and len(expected) == len(actual)
            and all(is_subset(e, a) for e, a in zip(expected, actual, strict=True))
        )
    if isinstance(expected, bool) or isinstance(actual, bool):
        return expected is actual
    return bool(expected == actual)


def diff(expected: Any, actual: Any) -> str:
    """A unified diff of the two values as indented JSON."""
    left = json.dumps(expected, indent=2, sort_keys=True, ensure_ascii=False).splitlines()
    right = json.dumps(actual, indent=2, sort_keys=True, ensure_ascii=False).splitlines()
    return "\n".join(difflib.unified_diff(left, right, "expected", "actual", lineterm="", n=2))


def narrow(expected: Any, actual: Any) -> Any:
    """`actual` cut to the keys `expected` names, so a diff shows only what was compared."""
    if isinstance(expected, dict) and isinstance(actual, dict):
        return {k: narrow(expected[k], actual[k]) for k in expected if k in actual}
    if isinstance(expected, list) and isinstance(actual, list) and len(expected) == len(actual):
        return [narrow(e, a) for e, a in zip(expected, actual, strict=True)]
    return actual
