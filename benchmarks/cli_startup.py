"""Start-up time of the ``keep`` command line against a bare Python start (issue 31, item 3).

    python benchmarks/cli_startup.py [--runs 15] [--before CHECKOUT]

Each round runs ``python -c pass`` and then each measured command once, as fresh
processes with this interpreter (``python -m keep_sdk ...``), so load on the machine hits
all alike. ``keep publish`` publishes into the demo workflow
(fixtures/workflows/demo/invoices.js), deployed beforehand to a SQLite store in a temporary
folder; ``keep notify`` delivers to an unknown correlation key of that store (it opens the
store, looks the key up and exits 1, as a webhook hitting a stale key does). Prints the
median wall time of each and its ratio to the bare start, and the load average before and
after. With ``--before CHECKOUT`` each round also runs every command with ``PYTHONPATH``
set to that checkout (another version of keep_sdk, e.g. the main branch), interleaved, so
both versions meet the same load.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

DEMO = Path(__file__).parents[1] / "fixtures" / "workflows" / "demo" / "invoices.js"

TARGETS = {"keep --version": 15.0, "keep notify": 25.0, "keep publish": 25.0}
"""The ratio to a bare Python start each command must stay within."""


def _commands(store: str) -> dict[str, list[str]]:
    keep = [sys.executable, "-m", "keep_sdk"]
    return {
        "python -c pass": [sys.executable, "-c", "pass"],
        "keep --version": [*keep, "--version"],
        "keep notify": [*keep, "notify", "kc-" + "0" * 40, "--result", "{}", "--store", store],
        "keep publish": [
            *keep,
            *("publish", "invoice.received", "--message-id", "bench"),
            *("--title", "bench", "--payload", "{}", "--store", store),
        ],
    }


def _time(argv: list[str], cwd: Path, env: dict[str, str] | None = None) -> float:
    started = time.perf_counter()
    subprocess.run(argv, cwd=cwd, capture_output=True, check=False, env=env)
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=15)
    parser.add_argument("--before", type=Path, default=None, help="another checkout to compare")
    args = parser.parse_args()
    before = None if args.before is None else {**os.environ, "PYTHONPATH": str(args.before)}
    with tempfile.TemporaryDirectory() as folder:
        cwd = Path(folder)
        store = f"sqlite:///{cwd / 'keep.db'}"
        commands = _commands(store)
        deploy = [sys.executable, "-m", "keep_sdk", "deploy", str(DEMO), "--store", store]
        subprocess.run(deploy, cwd=cwd, capture_output=True, check=True)
        for name in ("keep notify", "keep publish"):
            done = subprocess.run(commands[name], cwd=cwd, capture_output=True, text=True)
            print(f"{name}: exit {done.returncode} {done.stderr.strip()[:120]}")
        load_before = os.getloadavg()
        taken: dict[str, list[float]] = {name: [] for name in commands}
        for _ in range(args.runs):
            for name, argv in commands.items():
                taken[name].append(_time(argv, cwd))
                if before is not None and name in TARGETS:
                    taken.setdefault(f"before: {name}", []).append(_time(argv, cwd, before))
        load_after = os.getloadavg()
    bare = statistics.median(taken["python -c pass"])
    print(f"load average before {load_before[0]:.2f}, after {load_after[0]:.2f}; {args.runs} runs")
    print(f"{'command':<22} {'median ms':>10} {'x bare':>8} {'target':>8}")
    for name, values in taken.items():
        median = statistics.median(values)
        target = TARGETS.get(name)
        ratio = median / bare
        met = "met" if target is not None and ratio <= target else "MISSED"
        verdict = "" if target is None else f"<={target:.0f}x {met}"
        print(f"{name:<22} {median * 1000:>10.1f} {ratio:>8.1f} {verdict:>8}")


if __name__ == "__main__":
    main()
