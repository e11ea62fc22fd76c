"""Two checkouts of keep_sdk paired in time: CPU per run and runs/s of one against the other.

    python benchmarks/paired.py --base PATH [--pooled] [--runs 100] [--pairs 30]

On a machine whose speed changes from one minute to the next, two benchmark runs taken
minutes apart do not compare. Here two long-lived processes, one importing keep_sdk from
`--base` (another checkout, e.g. ``git worktree add /tmp/base REV``) and one from this
checkout, each build the bench workflow's store and scheduler (`runtime.WorkBehind`: SQLite,
WAL, ``synchronous=FULL``; in process, or the pooled worker with ``--pooled``) and then run
batches of ``--runs`` consumer runs in turn, the order swapped every pair. Printed: the
median CPU ms per run and runs/s of each side, and this checkout over the base per pair:
median, min and max over ``--pairs`` pairs.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent.parent


def child(pooled: bool) -> None:
    """Serve batches: read a run count per line, answer ``runs/s cpu_s_per_run``."""
    sys.path.insert(0, str(Path.cwd() / "benchmarks"))
    import tempfile

    import runtime

    isolation = runtime.pooled_worker(1, runtime.MAX_RUNS) if pooled else None
    where = runtime.WorkBehind(Path(tempfile.mkdtemp()), history=0, idle=0, isolation=isolation)
    where.timed_batch(100)
    print("ready", flush=True)
    for line in sys.stdin:
        rate, cpu = where.timed_batch(int(line))
        print(f"{rate} {cpu}", flush=True)


def _start(checkout: Path, pooled: bool) -> subprocess.Popen[str]:
    command = [sys.executable, str(Path(__file__).resolve()), "--child"]
    if pooled:
        command.append("--pooled")
    process = subprocess.Popen(
        command,
        cwd=checkout,
        env={**os.environ, "PYTHONPATH": str(checkout)},
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert process.stdout is not None
    if process.stdout.readline().strip() != "ready":
        raise SystemExit(f"paired: the benchmark in {checkout} did not start")
    return process


def _batch(process: subprocess.Popen[str], runs: int) -> tuple[float, float]:
    assert process.stdin is not None
    assert process.stdout is not None
    process.stdin.write(f"{runs}\n")
    process.stdin.flush()
    rate, cpu = process.stdout.readline().split()
    return float(rate), float(cpu)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--base", type=Path, help="the checkout to compare against")
    parser.add_argument("--pooled", action="store_true", help="the pooled worker process")
    parser.add_argument("--runs", type=int, default=100, help="consumer runs per batch")
    parser.add_argument("--pairs", type=int, default=30, help="batches per side")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args.pooled)
        return
    if args.base is None:
        parser.error("--base PATH is required")
    sides = {"base": _start(args.base.resolve(), args.pooled), "this": _start(HERE, args.pooled)}
    found: dict[str, list[tuple[float, float]]] = {"base": [], "this": []}
    for pair in range(args.pairs):
        for name in ("base", "this") if pair % 2 == 0 else ("this", "base"):
            found[name].append(_batch(sides[name], args.runs))
    for process in sides.values():
        assert process.stdin is not None
        process.stdin.close()
        process.wait()
    cpu = [t[1] / b[1] for b, t in zip(found["base"], found["this"], strict=True)]
    rate = [t[0] / b[0] for b, t in zip(found["base"], found["this"], strict=True)]
    mode = "pooled worker" if args.pooled else "in process"
    for name, values in found.items():
        print(
            f"paired  {mode}, {name}: {statistics.median(v[0] for v in values):.1f} runs/s, "
            f"{statistics.median(v[1] for v in values) * 1e3:.2f} ms CPU per run"
        )
    print(
        f"paired  this/base per pair, {args.pairs} pairs of {args.runs} runs: CPU per run "
        f"{statistics.median(cpu):.3f} ({min(cpu):.3f}-{max(cpu):.3f}), runs/s "
        f"{statistics.median(rate):.3f} ({min(rate):.3f}-{max(rate):.3f})"
    )


if __name__ == "__main__":
    main()
