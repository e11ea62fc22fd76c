"""Durable operations at scale: parked runs, notify → commit latency, worker memory, the scan.

    python benchmarks/durable.py [--parked 10000] [--sample 200] [--scan 100000]
                                 [--scan-base 0] [--scan-only]
                                 [--store URL | --postgres [ADMIN_URL]]

1. Parks ``--parked`` runs of the document-request workflow (through the store's commit
   points, as the runtime does) and reports the store's size per parked run.
2. Delivers ``--sample`` of them with `Runtime.notify` and reports the time from the
   notification to the run's commit (``next`` in QuickJS included), p50 and p99.
3. Starts a fresh worker process that plans twice with nothing parked and with every
   run parked, and reports its resident memory: nothing per parked run lives in a worker.
4. Times the timeout scan (`expired_invocations`) on an empty store (or one with
   ``--scan-base`` active invocations) and with ``--scan`` active invocations that are not
   due, and reports the ratio (target ≤ 1.1).

``--store`` defaults to a SQLite file in a temporary folder (``synchronous=NORMAL`` for the
setup's speed). ``--postgres`` measures PostgreSQL instead: a throwaway server started for
the run (`PostgresServer`), or the server of ``--postgres ADMIN_URL``; every measurement,
the scan included, then uses databases on it, and the store's size is that of its tables
and indexes.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from sqlalchemy import insert, text

from keep_sdk.sandbox import InProcessIsolation

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from keep_sdk.conformance.postgres import PostgresServer  # noqa: E402
from keep_sdk.connectors import ConnectorSet  # noqa: E402
from keep_sdk.connectors.builtin import Approvals  # noqa: E402
from keep_sdk.contract.durable import Invocation, Pending, derive_invocation  # noqa: E402
from keep_sdk.model import HandlerKind, PrepareResult, Reservation, RunPhase  # noqa: E402
from keep_sdk.plugins import KeepPlugins  # noqa: E402
from keep_sdk.runtime import Runtime  # noqa: E402
from keep_sdk.stores import Publication, SqlStore, SupportsDurable, open_store  # noqa: E402
from keep_sdk.stores.sql import _schema  # noqa: E402
from tests.durable.harness import DOCUMENT_REQUEST  # noqa: E402

WF = "document-request"
CONSUMER = "requestDocument"

_WORKER = """
import json, sys, resource
sys.path.insert(0, sys.argv[2])
from keep_sdk.app import Installation
from keep_sdk.scheduler import Scheduler
def rss():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * 4096
inst = Installation.open(sys.argv[1], isolation="in-process", must_exist=False)
worker = Scheduler(inst.runtime, worker="bench")
for _ in range(3):
    worker.due()
before = rss()
for _ in range(20):
    worker.due()
print(json.dumps({"rss": rss(), "growth": rss() - before}))
worker.close()
inst.close()
"""


def runtime_for(url: str) -> tuple[Any, Runtime]:
    store = open_store(url)
    plugins = KeepPlugins(load_entry_points=False)
    runtime = Runtime(
        store,
        ConnectorSet([Approvals()]),
        load_workflow=plugins.load_workflow,
        isolation=InProcessIsolation(),
    )
    return store, runtime


def park(store: Any, count: int) -> list[str]:
    """Park `count` runs the way the runtime does, through the commit points; their keys."""
    durable: SupportsDurable = store
    keys = []
    for n in range(count):
        mid = f"case-{n}"
        store.publish(WF, Publication(topic="document.needed", message_id=mid, title=mid))
        run = store.begin_run(WF, CONSUMER, HandlerKind.CONSUMER)
        data = {"id": mid, "client": "ann@example.com", "document": "passport", "received": []}
        store.save_prepare_result(
            run.id,
            PrepareResult(
                reservations=[Reservation(topic="document.needed", ids=[mid])], data=data
            ),
        )
        store.advance_phase(run.id, RunPhase.MUTATING)
        invocation_id, key = derive_invocation(WF, CONSUMER, run.id)
        _, invocation = durable.record_durable_intent(
            run.id,
            connector="approvals",
            operation="request",
            params={"to": "ann@example.com", "subject": "passport", "body": ""},
            idempotency_key=f"keep-{run.id}",
            invocation_id=invocation_id,
            correlation_key=key,
            timeout_at=dt.datetime.now(dt.UTC) + dt.timedelta(days=14),
        )
        durable.record_start_answer(invocation.id, Pending(external_id=f"req-{n}"))
        keys.append(key)
    return keys


def store_bytes(url: str) -> int | None:
    """The SQLite file (with its WAL), or PostgreSQL's keep tables with indexes and TOAST."""
    if url.startswith("sqlite:///"):
        path = Path(url.removeprefix("sqlite:///").split("?")[0])
        return sum(p.stat().st_size for p in path.parent.glob(path.name + "*"))
    if url.startswith("postgresql"):
        store = SqlStore(url)
        with store.engine.connect() as conn:
            size = conn.execute(
                text(
                    "SELECT coalesce(sum(pg_total_relation_size(c.oid)), 0) FROM pg_class c "
                    "JOIN pg_namespace n ON n.oid = c.relnamespace "
                    "WHERE c.relkind = 'r' AND n.nspname = current_schema()"
                )
            ).scalar_one()
        store.close()
        return int(size)
    return None


def worker_memory(url: str) -> dict[str, int]:
    done = subprocess.run(
        [sys.executable, "-c", _WORKER, url, str(ROOT)],
        capture_output=True,
        text=True,
        check=True,
    )
    result: dict[str, int] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def fill_for_scan(url: str, rows: int) -> None:
    """A store at `url` with `rows` active invocations that are not due (bulk insert)."""
    store = SqlStore(url)
    now = dt.datetime.now(dt.UTC)
    if rows:
        later = now + dt.timedelta(days=30)
        batch = []
        for n in range(rows):
            invocation = Invocation(
                id=f"inv-{n:040d}",
                run_id=f"run-{n}",
                ledger_id=f"mut-{n}",
                workflow="bench",
                handler="c",
                connector="approvals",
                operation="request",
                correlation_key=f"kc-{n:040d}",
                started=True,
                timeout_at=later,
                created_at=now,
                updated_at=now,
            )
            batch.append(
                {
                    "id": invocation.id,
                    "run_id": invocation.run_id,
                    "correlation_key": invocation.correlation_key,
                    "workflow": "bench",
                    "status": "active",
                    "claim_version": 0,
                    "next_poll_at": None,
                    "timeout_at": later,
                    "doc": invocation.model_dump(mode="json"),
                }
            )
        if store.dialect == "sqlite":
            stamp = "%Y-%m-%dT%H:%M:%S.%fZ"
            raw = sqlite3.connect(store.engine.url.database or "")
            raw.execute("PRAGMA foreign_keys=OFF")
            with raw:
                raw.executemany(
                    "INSERT INTO keep_invocations (id, run_id, correlation_key, workflow, "
                    "status, claim_version, next_poll_at, timeout_at, doc) "
                    "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                    [
                        (
                            r["id"],
                            r["run_id"],
                            r["correlation_key"],
                            r["workflow"],
                            r["status"],
                            0,
                            None,
                            later.strftime(stamp),
                            json.dumps(r["doc"]),
                        )
                        for r in batch
                    ],
                )
                raw.execute("ANALYZE")
            raw.close()
        else:
            with store.engine.begin() as conn:
                conn.execute(text("SET session_replication_role = replica"))
                conn.execute(insert(_schema.invocations), batch)
            with store.engine.connect() as conn:
                conn.execution_options(isolation_level="AUTOCOMMIT")
                conn.execute(text("VACUUM ANALYZE keep_invocations"))
    store.close()


def scan_plan(url: str) -> str:
    """PostgreSQL's plan for the scan's query on `url` (the first line names the index)."""
    store = SqlStore(url)
    with store.engine.connect() as conn:
        rows = conn.execute(
            text(
                "EXPLAIN SELECT doc FROM keep_invocations WHERE status = 'active' "
                "AND timeout_at <= :now ORDER BY timeout_at LIMIT 100"
            ),
            {"now": dt.datetime.now(dt.UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")},
        ).scalars()
        plan = " / ".join(str(r).strip() for r in rows)
    store.close()
    return plan


def scan_costs(empty_url: str, full_url: str, calls: int = 2000) -> tuple[float, float]:
    """Median µs of one `expired_invocations` call on each store, calls interleaved (in
    alternating order, so neither always runs first) so load on the machine hits both alike."""
    stores = [SqlStore(empty_url), SqlStore(full_url)]
    now = dt.datetime.now(dt.UTC)
    times: list[list[float]] = [[], []]
    for n in range(calls + 50):
        for i in (0, 1) if n % 2 else (1, 0):
            store = stores[i]
            started = time.perf_counter()
            found = store.expired_invocations(now)
            if n >= 50:
                times[i].append(time.perf_counter() - started)
            assert found == []
    for store in stores:
        store.close()
    print(
        f"  (fastest call: {min(times[0]) * 1e6:.0f} µs base, {min(times[1]) * 1e6:.0f} µs "
        f"full; ratio {min(times[1]) / min(times[0]):.2f})"
    )
    return statistics.median(times[0]) * 1e6, statistics.median(times[1]) * 1e6


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--parked", type=int, default=10_000)
    parser.add_argument("--sample", type=int, default=200)
    parser.add_argument("--scan", type=int, default=100_000)
    parser.add_argument(
        "--scan-base",
        type=int,
        default=0,
        help="Active invocations in the store the scan is compared with (default: empty).",
    )
    parser.add_argument("--store", default=None)
    parser.add_argument(
        "--postgres",
        nargs="?",
        const="start",
        default=None,
        help="Measure PostgreSQL: a throwaway server, or the server of this admin URL.",
    )
    parser.add_argument("--scan-only", action="store_true", help="Only the timeout scan.")
    args = parser.parse_args()
    folder = Path(tempfile.mkdtemp(prefix="keep-durable-bench-"))
    server: PostgresServer | None = None
    if args.postgres is not None:
        server = (
            PostgresServer.start(folder / "pg")
            if args.postgres == "start"
            else PostgresServer(admin_url=args.postgres)
        )
    try:
        measure(args, folder, server)
    finally:
        if server is not None:
            server.stop()


def measure(args: argparse.Namespace, folder: Path, server: PostgresServer | None) -> None:
    """Run the measurements of `main` on SQLite files in `folder`, or on `server`."""
    if server is not None:
        empty_url = server.create_database("keep_scan_empty")
        full_url = server.create_database("keep_scan_full")
    else:
        empty_url = f"sqlite:///{folder / 'scan0.db'}"
        full_url = f"sqlite:///{folder / 'scan.db'}"
    if args.scan_only:
        fill_for_scan(empty_url, args.scan_base)
        fill_for_scan(full_url, args.scan)
        empty, full = scan_costs(empty_url, full_url)
        print(
            f"timeout scan: {empty:.0f} µs with {args.scan_base}, {full:.0f} µs with "
            f"{args.scan} active invocations not due; ratio {full / empty:.2f}"
        )
        if server is not None:
            print(f"plan with {args.scan}: {scan_plan(full_url)}")
        return
    if server is not None:
        url = server.create_database("keep_durable")
    else:
        url = args.store or f"sqlite:///{folder / 'keep.db'}?synchronous=NORMAL"

    store, runtime = runtime_for(url)
    runtime.deploy(DOCUMENT_REQUEST)
    store.grant_permission(WF, "approvals.request", actor="bench")
    empty_worker = worker_memory(url)
    started = time.perf_counter()
    keys = park(store, args.parked)
    setup_s = time.perf_counter() - started
    size = store_bytes(url)
    parked_worker = worker_memory(url)

    latencies = []
    step = max(1, len(keys) // args.sample)
    for key in keys[::step][: args.sample]:
        started = time.perf_counter()
        receipt = runtime.notify(key, {"file": "passport.pdf"})
        latencies.append(time.perf_counter() - started)
        assert receipt.run is not None
        assert receipt.run.status.value == "committed"
    store.close()
    latencies.sort()
    p50 = statistics.median(latencies) * 1e3
    p99 = latencies[min(len(latencies) - 1, int(len(latencies) * 0.99))] * 1e3

    fill_for_scan(empty_url, args.scan_base)
    fill_for_scan(full_url, args.scan)
    scan_empty, scan_full = scan_costs(empty_url, full_url)

    print(f"store: {url.split('@')[-1]}")
    print(f"parked {args.parked} runs in {setup_s:.1f} s")
    if size is not None:
        print(f"store size: {size / 1e6:.1f} MB ({size / max(1, args.parked):.0f} B per run)")
    print(f"notify → commit over {len(latencies)} runs: p50 {p50:.1f} ms, p99 {p99:.1f} ms")
    print(
        f"worker RSS: {empty_worker['rss'] / 1e6:.1f} MB with none parked, "
        f"{parked_worker['rss'] / 1e6:.1f} MB with {args.parked} parked "
        f"(growth over 20 planning passes: {empty_worker['growth']} B / "
        f"{parked_worker['growth']} B)"
    )
    print(
        f"timeout scan: {scan_empty:.0f} µs with {args.scan_base}, {scan_full:.0f} µs with "
        f"{args.scan} active "
        f"invocations not due; ratio {scan_full / scan_empty:.2f}"
    )
    os.environ.pop("KEEP_BENCH", None)


if __name__ == "__main__":
    main()
