"""Console benchmark: how long a page takes with 100k events, 10k runs and 10k ledger entries.

    python benchmarks/console.py [--events 100000] [--runs 10000] [--rounds 15]

Builds a SQLite store (a temporary file) with one workflow holding --events events
(two topics, all four statuses) and --runs runs with one ledger entry each, serves the
console with a real uvicorn on 127.0.0.1, and times GET requests over HTTP (token in
the header), the first page and a page deep in the history of each list. Prints the
median and the slowest of --rounds requests per page, and the status report
(``/api/status``, what ``keep status --json`` prints). Target: every paginated page
and the status report under 200 ms.
"""

from __future__ import annotations

import argparse
import datetime as dt
import statistics
import sys
import tempfile
import time
from pathlib import Path

import httpx
from sqlalchemy import insert

sys.path.insert(0, str(Path(__file__).parents[1]))

from keep_sdk.app import Installation
from keep_sdk.console import ConsoleSettings, create_app
from keep_sdk.model import (
    Event,
    EventStatus,
    HandlerKind,
    LedgerEntry,
    LedgerStatus,
    RunPhase,
    RunRecord,
    RunStatus,
)
from keep_sdk.stores import HandlerSpec, SqlStore
from keep_sdk.stores.sql import _rows as rows
from keep_sdk.stores.sql import _schema as t
from tests.console.server import served

TOKEN = "benchmark-token-0123456789"
WF = "bench"
BEGIN = dt.datetime(2026, 1, 1, tzinfo=dt.UTC)
EVENT_STATUSES = [EventStatus.CONSUMED] * 8 + [EventStatus.PENDING, EventStatus.SKIPPED]
RUN_STATUSES = [RunStatus.COMMITTED] * 8 + [RunStatus.FAILED_LOGIC, RunStatus.PAUSED_APPROVAL]


def fill(store: SqlStore, events: int, runs: int) -> None:
    """Deploy the workflow and bulk-insert the rows (bypassing the commit points)."""
    store.deploy(
        WF,
        "export default Keep.workflow({})",
        {"topics": ["a", "b"]},
        handlers=[HandlerSpec(name="c", kind=HandlerKind.CONSUMER, subscribe=["a"])],
    )
    store.bulk_load_events(
        WF,
        [
            Event(
                id=f"evt_{i:08d}",
                workflow=WF,
                topic="a" if i % 4 else "b",
                message_id=f"m{i}",
                title=f"Email {i} <b>from</b> someone",
                payload={"n": i},
                status=(status := EVENT_STATUSES[i % len(EVENT_STATUSES)]),
                reserved_by=f"run_{i % runs:08d}" if status is EventStatus.CONSUMED else None,
                created_at=BEGIN + dt.timedelta(seconds=i),
                updated_at=BEGIN + dt.timedelta(seconds=i),
            )
            for i in range(events)
        ],
    )
    run_rows, entry_rows = [], []
    for i in range(runs):
        at = BEGIN + dt.timedelta(seconds=i)
        run = RunRecord(
            id=f"run_{i:08d}", workflow=WF, workflow_version=1, handler="c",
            kind=HandlerKind.CONSUMER, phase=RunPhase.COMMITTED,
            status=RUN_STATUSES[i % len(RUN_STATUSES)], logs=[f"line {i}"],
            created_at=at, updated_at=at,
        )  # fmt: skip
        run_rows.append(
            {
                "id": run.id, "workflow": WF, "workflow_version": 1, "handler": "c",
                "kind": "consumer", "retry_of": None, "input_state": None, "created_at": at,
                **rows.run_values(run),
            }
        )  # fmt: skip
        entry_rows.append(
            rows.entry_values(
                LedgerEntry(
                    id=f"led_{i:08d}",
                    run_id=run.id,
                    workflow=WF,
                    handler="c",
                    connector="sheets",
                    operation="appendRow",
                    params={"values": [i]},
                    idempotency_key=f"k{i}",
                    status=LedgerStatus.APPLIED,
                    ui_title=f"Add row {i}",
                    created_at=at,
                    updated_at=at,
                )
            )
        )
    with store.engine.begin() as conn:
        for start in range(0, runs, 5000):
            conn.execute(insert(t.runs), run_rows[start : start + 5000])
            conn.execute(insert(t.ledger), entry_rows[start : start + 5000])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--events", type=int, default=100_000)
    parser.add_argument("--runs", type=int, default=10_000)
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument(
        "--no-status-report",
        action="store_true",
        help="leave /api/status (keep status --json, answered from indexes) out",
    )
    args = parser.parse_args()
    folder = Path(tempfile.mkdtemp(prefix="keep-console-bench-"))
    url = f"sqlite:///{folder / 'keep.db'}"
    started = time.perf_counter()
    store = SqlStore(url)
    fill(store, args.events, args.runs)
    store.close()
    print(f"filled {args.events} events, {args.runs} runs and ledger entries "
          f"in {time.perf_counter() - started:.1f} s")  # fmt: skip
    deep_event = f"evt_{args.events // 2:08d}"
    deep_run = f"run_{args.runs // 2:08d}"
    deep_entry = f"led_{args.runs // 2:08d}"
    pages = [
        ("events, first page", f"/events?workflow={WF}"),
        ("events, deep page", f"/events?workflow={WF}&before={deep_event}"),
        ("events, topic b + skipped", f"/events?workflow={WF}&topic=b&status=skipped"),
        ("events API, first page", f"/api/events?workflow={WF}"),
        ("inputs → outputs, first page", f"/workflows/{WF}"),
        ("inputs → outputs, deep page", f"/workflows/{WF}?before={deep_event}"),
        ("runs, first page", "/runs"),
        ("runs, deep page", f"/runs?before={deep_run}"),
        ("runs, failed:logic", "/runs?status=failed:logic"),
        ("run detail", f"/runs/{deep_run}"),
        ("ledger, first page", "/ledger"),
        ("ledger, deep page", f"/ledger?before={deep_entry}"),
        ("workflows", "/"),
    ]
    if not args.no_status_report:
        pages.append(("status report API (keep status --json)", "/api/status"))
    inst = Installation.open(url, isolation="in-process", must_exist=True)
    app = create_app(ConsoleSettings(store_url=url, token=TOKEN), inst)
    timings: dict[str, list[float]] = {name: [] for name, _ in pages}
    try:
        with (
            served(app) as base,
            httpx.Client(
                base_url=base, headers={"Authorization": f"Bearer {TOKEN}"}, timeout=120
            ) as http,
        ):
            for _, path in pages:
                assert http.get(path).status_code == 200, path
            for _ in range(args.rounds):
                for name, path in pages:
                    start = time.perf_counter()
                    answer = http.get(path)
                    timings[name].append((time.perf_counter() - start) * 1000)
                    assert answer.status_code == 200, (path, answer.status_code)
    finally:
        inst.close()
    print(f"{'page':44} {'median ms':>10} {'slowest ms':>11}")
    for name, found in timings.items():
        print(f"{name:44} {statistics.median(found):10.1f} {max(found):11.1f}")


if __name__ == "__main__":
    main()
