"""Playing the steps of a case or scenario in a world, then checking its end state."""

from __future__ import annotations

from collections.abc import Sequence

from keep_sdk.cases._expect import check
from keep_sdk.cases._model import Expectation, Step
from keep_sdk.cases._result import Mismatch
from keep_sdk.cases._steps import do_step
from keep_sdk.cases._world import World

__all__ = ["play"]


def play(world: World, steps: Sequence[Step], expect: Expectation) -> list[Mismatch]:
    """Carry out `steps` in order (``step 1``, ``step 2``, ...), then check `expect` (the
    ``end state``); every mismatch found on the way, in order."""
    found: list[Mismatch] = []
    for number, step in enumerate(steps, 1):
        found += do_step(world, step, f"step {number}")
    return found + check(world, expect, "end state")
