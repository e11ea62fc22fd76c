"""Where a consumer run's CPU goes: the bench workflow's runs, each step's own CPU per run.

    python benchmarks/accounting.py [--runs 2000] [--pooled]

The bench workflow of `runtime.py` (SQLite, WAL, ``synchronous=FULL``; in process, or the
pooled worker with ``--pooled``) drains ``--runs`` consumer runs while the steps below are
timed with the thread's CPU clock. Each step is charged its own CPU: what a timed step calls
that is timed too is charged to that one, so the rows add up to the drain's CPU (printed
as ``drain``, the baseline every share is of; what no step holds, publishing the batch's
events among it, is ``the rest``). A SQL statement run on the cursor is one row
per statement text. With ``--pooled`` the worker process's CPU per run is printed beside
the parent's, and a bare pipe round trip between two Python processes (the floor of each of
a run's four messages to the worker and back) is measured in the same run.

Timing costs ≈ 4 µs per timed call on the 2-core machine, about 5 % of a run: the shares
are the figures, the absolute times are a little high.
"""

from __future__ import annotations

import argparse
import collections
import functools
import struct
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import runtime
from sqlalchemy.engine import default

from keep_sdk.runtime import _driver, _host, _ledger
from keep_sdk.sandbox import _isolation, process
from keep_sdk.scheduler import _drain, _scheduler
from keep_sdk.stores._commit import _runs
from keep_sdk.stores.sql import _fast, _file, _group

_spent: collections.Counter[str] = collections.Counter()
_calls: collections.Counter[str] = collections.Counter()
_nested: list[float] = []


def _timed(label: str | Callable[..., str], func: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(func)
    def timed(*args: Any, **kwargs: Any) -> Any:
        started = time.thread_time()
        _nested.append(0.0)
        try:
            return func(*args, **kwargs)
        finally:
            used = time.thread_time() - started
            name = label if isinstance(label, str) else label(*args)
            _spent[name] += used - _nested.pop()
            _calls[name] += 1
            if _nested:
                _nested[-1] += used

    return timed


def _time(owner: Any, name: str, label: str | Callable[..., str]) -> None:
    found = owner.__dict__[name]
    if isinstance(found, staticmethod):
        setattr(owner, name, staticmethod(_timed(label, found.__func__)))
    else:
        setattr(owner, name, _timed(label, found))


def _statement(_: Any, plan: Any, *__: Any) -> str:
    return "sql: " + " ".join(plan.sql.split())[:70]


STEPS: tuple[tuple[Any, str, str | Callable[..., str]], ...] = (
    (_isolation.InProcessIsolation, "run", "sandbox: a phase in process"),
    (process.ProcessIsolation, "run", "sandbox: the parent's side of a pooled phase"),
    (process.ProcessIsolation, "_send_request", "sandbox: send a request to the worker"),
    (process._Worker, "message", "sandbox: read and parse a worker message"),
    (process.ProcessIsolation, "_relay", "sandbox: relay a host call"),
    (_runs.RunPoints, "begin_consumer_run", "commit point: begin + prepare + intent"),
    (_runs.RunPoints, "commit_applied_consumer_run", "commit point: applied + commit"),
    (_fast.FastConnection, "_run", _statement),
    (default.DefaultDialect, "do_commit", "sql: COMMIT"),
    (_group.GroupCommit, "_join", "store: open a write transaction"),
    (_file.DatabaseFile, "check", "store: look at the database file"),
    (_ledger.MutationDesk, "issue", "runtime: the external call"),
    (_host.PhaseHost, "call", "runtime: a host call (ctx.peek)"),
    (_driver.Driver, "start", "runtime: the driver"),
    (_drain.Drain, "pending", "scheduler: read what is pending"),
    (_scheduler.Scheduler, "step", "scheduler: a step"),
)
"""What is timed: (class, method, the row it is charged to, or how to name the row)."""


def instrument() -> None:
    """Time the steps of a run (`STEPS`)."""
    for owner, name, label in STEPS:
        _time(owner, name, label)


def pipe_round_trip(count: int = 3000) -> float:
    """Seconds of wall time for one 600-byte frame to a child Python process and back."""
    echo = (
        "import sys\nr, w = sys.stdin.buffer, sys.stdout.buffer\n"
        "while len(h := r.read(4)) == 4:\n"
        "    w.write(h + r.read(int.from_bytes(h, 'big'))); w.flush()\n"
    )
    child = subprocess.Popen(
        [sys.executable, "-c", echo], stdin=subprocess.PIPE, stdout=subprocess.PIPE
    )
    assert child.stdin is not None
    assert child.stdout is not None
    body = b"x" * 600
    frame = struct.pack(">I", len(body)) + body
    elapsed = 0.0
    for round_ in range(count + 200):
        started = time.perf_counter()
        child.stdin.write(frame)
        child.stdin.flush()
        child.stdout.read(len(frame))
        if round_ >= 200:
            elapsed += time.perf_counter() - started
    child.stdin.close()
    child.wait()
    return elapsed / count


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=2000)
    parser.add_argument("--pooled", action="store_true", help="the pooled worker process")
    args = parser.parse_args()
    isolation = runtime.pooled_worker(1, runtime.MAX_RUNS) if args.pooled else None
    where = runtime.WorkBehind(Path(tempfile.mkdtemp()), history=0, idle=0, isolation=isolation)
    instrument()
    where.timed_batch(200)
    _spent.clear()
    _calls.clear()
    worker = runtime.children_cpu()
    drained = time.thread_time()
    rate, cpu = where.timed_batch(args.runs)
    drained = time.thread_time() - drained
    worker = runtime.children_cpu() - worker
    runs = args.runs
    mode = "pooled worker" if args.pooled else "in process"
    print(f"accounting  {mode}: {runs} runs, {rate:.0f} runs/s, {cpu * 1e3:.2f} ms CPU per run")
    print(f"{'µs per run':>11} {'share':>6} {'calls':>6}  step")
    print(f"{drained / runs * 1e6:11.0f} {1:6.3f} {'':>6}  drain (this thread; the baseline)")
    for name, spent in sorted(_spent.items(), key=lambda item: -item[1]):
        share = spent / drained
        print(f"{spent / runs * 1e6:11.0f} {share:6.3f} {_calls[name] / runs:6.1f}  {name}")
    rest = drained - sum(_spent.values())
    print(
        f"{rest / runs * 1e6:11.0f} {rest / drained:6.3f} {'':>6}  the rest (publishing the batch)"
    )
    if args.pooled:
        print(f"{worker / runs * 1e6:11.0f} {worker / drained:6.3f} {'':>6}  the worker process")
        trip = pipe_round_trip()
        print(f"pipe round trip between two Python processes: {trip * 1e6:.1f} µs wall")


if __name__ == "__main__":
    main()
