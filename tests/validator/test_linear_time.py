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
from collections.abc import Callable

import pytest

from keep_sdk import validate

GROWTH = 8
SLACK = 2.5
REPEATS = 3


def workflow(body: str, before: str = "") -> str:
    return (
        f"{before}\nexport default Keep.workflow({{ name: 'w', topics: {{ t: {{}} }},\n"
        "  consumers: { c: { subscribe: ['t'],\n"
        f"    async prepare(ctx, state) {{\n{body}\n"
        "      return { reservations: [], data: {} };\n    },\n"
        "    async mutate(ctx, prepared) {},\n    async next(ctx, prepared) {} } } });\n"
    )


SHAPES: dict[str, tuple[Callable[[int], str], int]] = {
    "nullish-chain-of-a-free-name": (
        lambda n: workflow("const v = " + " ?? ".join(["a"] * n)),
        200,
    ),
    "optional-calls-nested": (lambda n: workflow("const v = " + "a?.b(" * n + ")" * n), 64),
    "sum-of-a-declared-name": (
        lambda n: workflow("const a = 1;\nconst v = " + " + ".join(["a"] * n) + ";"),
        300,
    ),
    "member-chain": (lambda n: workflow("const a = {};\nconst v = a" + ".b()" * n + ";"), 300),
    "object-with-many-keys": (
        lambda n: workflow("const v = {" + ", ".join(f"k{i}: {i}" for i in range(n)) + "};"),
        300,
    ),
    "many-declarations": (
        lambda n: workflow("".join(f"const v{i} = {i};\n" for i in range(n))),
        150,
    ),
    "many-templates": (
        lambda n: workflow("".join(f"const t{i} = `${{state}}-{i}`;\n" for i in range(n))),
        100,
    ),
    "module-constants": (
        lambda n: workflow(
            "const v = [" + ", ".join(f"C{i}" for i in range(n)) + "];",
            "".join(f"const C{i} = `c${{{i}}}`;\n" for i in range(n)),
        ),
        150,
    ),
    "many-helpers": (
        lambda n: workflow(
            "let v = 0;\n" + "".join(f"v = h{i}(v);\n" for i in range(n)),
            "".join(f"function h{i}(x) {{ return x + {i}; }}\n" for i in range(n)),
        ),
        100,
    ),
    "non-ascii-strings": (
        lambda n: workflow("".join(f"const s{i} = 'é☃\U0001f600{i}' + s;\n" for i in range(n))),
        100,
    ),
}


def cpu_seconds(source: str) -> float:
    best = float("inf")
    for _ in range(REPEATS):
        started = time.process_time()
        validate(source)
        best = min(best, time.process_time() - started)
    return best


@pytest.mark.parametrize("shape", sorted(SHAPES))
def test_time_grows_linearly_with_size(shape: str) -> None:
    generate, size = SHAPES[shape]
    small, large = generate(size), generate(GROWTH * size)
    assert len(large) > GROWTH // 2 * len(small)
    validate(small)
    ratio = cpu_seconds(large) / max(cpu_seconds(small), 1e-4)
    assert ratio <= GROWTH * SLACK, f"{shape}: {GROWTH}x the size took {ratio:.1f}x the time"
