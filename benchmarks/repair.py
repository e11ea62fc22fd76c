"""Repair-loop benchmark: replay throughput against live runs, and `check()` on the demo.

    python benchmarks/repair.py [--runs 1000] [--checks 7]

1. Live: the demo workflow (fixtures/workflows/demo/invoices.js) on a temporary SQLite
   store (WAL, synchronous=FULL) drains --runs invoice events through the reference
   scheduler in real QuickJS (in-process isolation): one ``addRow`` run per invoice
   (prepare, a ledgered ``sheets.appendRow`` on the built-in double, next publishing
   ``row.added``) and the ``postSummary`` runs. Committed runs per second.
2. Replay: ``replay_runs`` of the same script over every recorded run of that store
   (reads answered from the traces, no connector, nothing written). Runs per second and
   the ratio replay ÷ live (goal ≥ 5).
3. ``check()`` of the demo with its cases (``invoices.keep.yaml``): the median of
   --checks calls.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

from keep_sdk.connectors import ConnectorSet
from keep_sdk.connectors.builtin import Gmail, Sheets, Slack
from keep_sdk.model import RunStatus
from keep_sdk.plugins import KeepPlugins
from keep_sdk.repair import ReplayOutcome, check, replay_runs
from keep_sdk.runtime import Runtime
from keep_sdk.sandbox import InProcessIsolation
from keep_sdk.scheduler import Scheduler
from keep_sdk.stores import Publication, open_store

DEMO = Path(__file__).parents[1] / "fixtures" / "workflows" / "demo"
SOURCE = (DEMO / "invoices.js").read_text()


def live(folder: Path, runs: int) -> tuple[str, int, float]:
    """Record `runs` addRow runs (and the summaries); the store URL, runs committed, seconds."""
    url = f"sqlite:///{folder / 'keep.db'}"
    store = open_store(url)
    plugins = KeepPlugins(load_entry_points=False)
    connectors = ConnectorSet(
        [
            Gmail(),
            Sheets(seed={"spreadsheets": {"invoices": {"rows": []}}}),
            Slack(seed={"channels": {"#finance": []}}),
        ]
    )
    runtime = Runtime(
        store, connectors, load_workflow=plugins.load_workflow, isolation=InProcessIsolation()
    )
    runtime.deploy(SOURCE)
    for permission in ("gmail.read", "sheets.write", "slack.write"):
        store.grant_permission("invoices", permission, actor="bench")
    for i in range(runs):
        store.publish(
            "invoices",
            Publication(
                topic="invoice.received",
                message_id=f"msg-{i}",
                title=f"Invoice {i}",
                payload={"from": f"s{i}@example.com", "subject": f"Invoice {i}",
                         "amount": f"{i}.00 EUR", "receivedAt": "2026-11-21T08:00:00Z"},
            ),
        )  # fmt: skip
    scheduler = Scheduler(runtime, worker="bench")
    started = time.perf_counter()
    scheduler.run_until_idle(max_steps=10 * runs + 100)
    elapsed = time.perf_counter() - started
    committed = len(store.list_runs(workflow="invoices", status=RunStatus.COMMITTED))
    store.close()
    return url, committed, elapsed


def replay(url: str) -> tuple[int, float, dict[str, int]]:
    plugins = KeepPlugins(load_entry_points=False)
    store = open_store(url)
    try:
        workflow = plugins.load_workflow(SOURCE)
        started = time.perf_counter()
        summary = replay_runs(
            SOURCE, store, manifest=workflow.manifest, connectors=plugins.manifest()
        )
        elapsed = time.perf_counter() - started
    finally:
        store.close()
    return len(summary.runs), elapsed, summary.counts


def checks(times: int) -> list[float]:
    cases = DEMO / "invoices.keep.yaml"
    found = []
    for _ in range(times):
        started = time.perf_counter()
        verdict = check(SOURCE, cases=cases, deployed=SOURCE)
        found.append(time.perf_counter() - started)
        assert verdict.ok, verdict.render()
    return found


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=1000)
    parser.add_argument("--checks", type=int, default=7)
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        url, committed, live_s = live(Path(tmp), args.runs)
        replayed, replay_s, counts = replay(url)
    live_rate, replay_rate = committed / live_s, replayed / replay_s
    print(f"live:   {committed} committed runs in {live_s:.2f} s = {live_rate:.1f} runs/s")
    print(f"replay: {replayed} runs in {replay_s:.2f} s = {replay_rate:.1f} runs/s {counts}")
    print(f"ratio replay/live: {replay_rate / live_rate:.2f} (goal >= 5)")
    timings = checks(args.checks)
    print(
        f"check() on the demo with its 4 cases: median {statistics.median(timings) * 1000:.0f} ms "
        f"(min {min(timings) * 1000:.0f}, max {max(timings) * 1000:.0f}, n={len(timings)})"
    )
    same = counts.get(ReplayOutcome.SAME.value, 0) == replayed
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
