"""`validate` takes time linear in the script's size, for every shape of script.

Each shape is generated at size n and 8n. A linear validator does at most about
8 times the work on the larger one (less, with the fixed cost of a call); a
quadratic path does about 64 times. The work is measured as CPU time of this
process (`time.process_time`, not wall-clock time, so other processes on the
machine do not count), the fastest of three runs each (noise only ever adds
time), and the bound is generous: 8 x 2.5 = 20. That keeps the test quiet under
load while a quadratic path (64x, and the 1,000-term ``a ?? a ?? …`` chain that
took 8.5 s before took 30x more for 8x the size) still fails it.
"""

from __future__ import annotations

import time

import pytest

from keep_sdk import validate
from tests.validator.growing import SHAPES

GROWTH = 8
SLACK = 2.5
REPEATS = 3


CHECKED = (
    "nullish chain, free name",
    "a?.b( nested",
    "sum chain, declared",
    "call chain",
    "object, many keys",
    "many declarations",
    "many templates",
    "module constants",
    "helpers",
    "non-ASCII strings",
)
"""The shapes CI checks (`benchmarks/validator.py --scaling` measures every one)."""


def cpu_seconds(source: str) -> float:
    best = float("inf")
    for _ in range(REPEATS):
        started = time.process_time()
        validate(source)
        best = min(best, time.process_time() - started)
    return best


@pytest.mark.parametrize("shape", CHECKED)
def test_time_grows_linearly_with_size(shape: str) -> None:
    generate, size = SHAPES[shape]
    small, large = generate(size), generate(GROWTH * size)
    assert len(large) > GROWTH // 2 * len(small)
    validate(small)
    ratio = cpu_seconds(large) / max(cpu_seconds(small), 1e-4)
    assert ratio <= GROWTH * SLACK, f"{shape}: {GROWTH}x the size took {ratio:.1f}x the time"
