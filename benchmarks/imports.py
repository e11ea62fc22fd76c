"""Import cost of the public entry points, against a bare interpreter measured in the same run.

    python benchmarks/imports.py [--rounds 15]

Each round starts fresh interpreters (interleaved, so load on the machine hits all
alike): ``python -c pass`` (the baseline), then one per entry point. Prints the
median wall time of each, the median extra over the baseline, and its ratio to the
baseline. The target for ``import keep_sdk`` is an extra under 50 ms; `-X importtime`
reports what the import itself took (cumulative µs of the ``keep_sdk`` line).
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time

ENTRY_POINTS = {
    "baseline: python -c pass": "pass",
    "import keep_sdk": "import keep_sdk",
    "import keep_sdk.runtime": "import keep_sdk.runtime",
    "import keep_sdk.scheduler": "import keep_sdk.scheduler",
    "import keep_sdk.validator": "import keep_sdk.validator",
}


def _wall(code: str) -> float:
    started = time.perf_counter()
    subprocess.run([sys.executable, "-c", code], check=True)
    return time.perf_counter() - started


def _self_reported(module: str) -> int:
    err = subprocess.run(
        [sys.executable, "-X", "importtime", "-c", f"import {module}"],
        check=True,
        capture_output=True,
        text=True,
    ).stderr
    line = [x for x in err.splitlines() if x.rstrip().endswith(f"| {module}")][-1]
    return int(line.split("|")[1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=15)
    rounds = parser.parse_args().rounds
    times: dict[str, list[float]] = {name: [] for name in ENTRY_POINTS}
    for _ in range(rounds):
        for name, code in ENTRY_POINTS.items():
            times[name].append(_wall(code))
    base = statistics.median(times["baseline: python -c pass"])
    print(f"{rounds} rounds, CPython {sys.version.split()[0]}")
    print(f"{'entry point':28} {'median ms':>10} {'extra ms':>9} {'x baseline':>11}")
    for name, samples in times.items():
        median = statistics.median(samples)
        print(f"{name:28} {median * 1e3:10.1f} {(median - base) * 1e3:9.1f} {median / base:11.2f}")
    own = statistics.median(_self_reported("keep_sdk") for _ in range(rounds))
    print(f"-X importtime, keep_sdk cumulative: {own / 1e3:.1f} ms (target < 50 ms)")


if __name__ == "__main__":
    main()
