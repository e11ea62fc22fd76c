"""Runtime benchmark: committed consumer runs per second end to end, and 1 vs 2 workers.

    python benchmarks/runtime.py [--events 300] [--workflows 4] [--postgres URL]

End to end means the reference scheduler picks the work, the runtime runs
prepare, mutate (a ledgered ``sheets.appendRow`` on the built-in double) and
next in real QuickJS (in-process isolation), and the real store commits every
checkpoint. For SQLite (a temporary file, WAL, synchronous=FULL) and
PostgreSQL (a server started for the run, or --postgres / KEEP_TEST_POSTGRES_URL)
it prints:

1. the raw commit rate of the same database (one-row insert transactions per
   second through the store's engine): the baseline;
2. committed consumer runs per second through ``Scheduler.run_until_idle`` and
   the ratio runs/s ÷ raw commits/s (a run takes 7 commit points plus the
   scheduler's reads, so about 1/8 to 1/15 is what the design allows);
3. SQLite: the same with the default pooled worker process (ProcessIsolation),
   as a ratio to in-process (target: within 1.25x, a ratio >= 0.8);
4. SQLite: how the rate holds up with work behind it: runs/s with 100,000
   committed runs (and their ledger entries) of history, and with 99 more idle
   workflows deployed, each as a ratio to a store without them (five interleaved
   batches each, medians);
5. PostgreSQL only: the same backlog spread over --workflows workflows, drained
   by 1 and then by 2 ``keep worker`` processes (leases, heartbeats); the
   speed-up of 2 over 1 (at most 2 on 2 cores; the workers and the database
   share those cores).
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

import sqlalchemy as sa

from keep_sdk.conformance.postgres import TEST_URL_ENV, PostgresServer
from keep_sdk.connectors import ConnectorSet
from keep_sdk.connectors.builtin import Gmail, Sheets, Slack
from keep_sdk.model import EventStatus, RunStatus
from keep_sdk.plugins import KeepPlugins
from keep_sdk.runtime import Runtime
from keep_sdk.sandbox import InProcessIsolation, Isolation, ProcessIsolation
from keep_sdk.scheduler import Scheduler
from keep_sdk.stores import Publication, SqlStore, open_store

SCRIPT = """
export default Keep.workflow({
  name: "NAME",
  topics: { "job.queued": {} },
  consumers: {
    record: Keep.consumer({
      subscribe: ["job.queued"],
      async prepare(ctx, state) {
        const [job] = await ctx.peek("job.queued", { limit: 1 });
        if (!job) return { reservations: [], data: {} };
        return { reservations: [{ topic: "job.queued", ids: [job.messageId] }],
                 data: { id: job.messageId, n: job.payload.n },
                 ui: { title: `Record job ${job.messageId}` } };
      },
      async mutate(ctx, prepared) {
        const { id, n } = prepared.data;
        await ctx.sheets.appendRow({ spreadsheetId: "jobs", values: [id, n] });
      },
      async next(ctx, prepared, mutationResult) {
        return { last: prepared.data.id };
      },
    }),
  },
});
"""

GRANTS = ("sheets.write",)


def raw_commits(store: SqlStore, n: int) -> float:
    """One-row insert transactions per second through the store's engine."""
    table = sa.Table(
        "bench_runtime_raw",
        sa.MetaData(),
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("v", sa.Text),
    )
    table.create(store.engine, checkfirst=True)
    start = time.perf_counter()
    for i in range(n):
        with store.engine.begin() as conn:
            conn.execute(table.insert().values(v=f"row {i}"))
    return n / (time.perf_counter() - start)


def deploy(url: str, names: list[str], events: int, doubles: Path | None) -> None:
    """Deploy one workflow per name and queue `events` jobs spread over them."""
    store = open_store(url)
    sheets = Sheets(backing=doubles, seed={"spreadsheets": {"jobs": {"rows": []}}})
    runtime = Runtime(
        store,
        ConnectorSet([Gmail(backing=doubles), sheets, Slack(backing=doubles)]),
        load_workflow=KeepPlugins(load_entry_points=False).load_workflow,
    )
    for name in names:
        runtime.deploy(SCRIPT.replace("NAME", name))
        for permission in GRANTS:
            store.grant_permission(name, permission, actor="bench")
    for i in range(events):
        name = names[i % len(names)]
        store.publish(
            name,
            Publication(topic="job.queued", message_id=f"j{i}", title=f"Job {i}", payload={"n": i}),
        )
    store.close()


def runs_per_second(url: str, events: int, isolation: Isolation | None = None) -> float:
    """Committed consumer runs per second through one scheduler (in-process isolation
    unless `isolation` is given)."""
    deploy(url, ["bench"], events, None)
    store = open_store(url)
    sheets = Sheets(seed={"spreadsheets": {"jobs": {"rows": []}}})
    runtime = Runtime(
        store,
        ConnectorSet([Gmail(), sheets, Slack()]),
        load_workflow=KeepPlugins(load_entry_points=False).load_workflow,
        isolation=isolation or InProcessIsolation(),
    )
    scheduler = Scheduler(runtime)
    start = time.perf_counter()
    done = scheduler.run_until_idle(max_steps=events + 10)
    elapsed = time.perf_counter() - start
    committed = [a for a in done if a.run is not None and a.run.status is RunStatus.COMMITTED]
    assert len(committed) == events, f"{len(committed)} of {events} runs committed"
    assert len(sheets.effects("appendRow")) == events
    store.close()
    return events / elapsed


def copy_history(store: SqlStore, runs: int) -> None:
    """Add `runs` copies of the newest committed run and of its ledger entry, then
    checkpoint the WAL: weeks of history sit in the database file, not in a WAL that one
    bulk insert just grew."""
    with store.engine.begin() as conn:
        newest = "SELECT * FROM keep_runs ORDER BY seq DESC LIMIT 1"
        run = dict(conn.execute(sa.text(newest)).mappings().one())
        entry = dict(conn.execute(sa.text("SELECT * FROM keep_ledger LIMIT 1")).mappings().one())
        del run["seq"], entry["seq"]
        run_copies = [{**run, "id": f"run_h{i}"} for i in range(runs)]
        entry_copies = [{**entry, "id": f"mut_h{i}", "run_id": f"run_h{i}"} for i in range(runs)]
        for table, rows in (("keep_runs", run_copies), ("keep_ledger", entry_copies)):
            names = ", ".join(rows[0])
            values = ", ".join(f":{c}" for c in rows[0])
            conn.execute(sa.text(f"INSERT INTO {table} ({names}) VALUES ({values})"), rows)
    raw = store.engine.raw_connection()
    try:
        raw.driver_connection.execute("PRAGMA wal_checkpoint(TRUNCATE)")  # type: ignore[union-attr]
    finally:
        raw.close()


class WorkBehind:
    """The bench workflow on a SQLite store with `history` runs of history and `idle` other
    workflows deployed; `batch` measures committed runs/s of a fresh backlog."""

    def __init__(self, tmp: Path, *, history: int, idle: int) -> None:
        url = f"sqlite:///{tmp / f'behind-{history}-{idle}.db'}"
        deploy(url, ["bench"] + [f"idle{i}" for i in range(idle)], 1, None)
        store = open_store(url)
        assert isinstance(store, SqlStore)
        self.store = store
        runtime = Runtime(
            store,
            ConnectorSet([Gmail(), Sheets(seed={"spreadsheets": {"jobs": {"rows": []}}}), Slack()]),
            load_workflow=KeepPlugins(load_entry_points=False).load_workflow,
            isolation=InProcessIsolation(),
        )
        self.scheduler = Scheduler(runtime)
        self.scheduler.run_until_idle()
        if history:
            copy_history(store, history)
        self.published = 0

    def batch(self, events: int) -> float:
        for _ in range(events):
            self.published += 1
            n = self.published
            message = Publication(topic="job.queued", message_id=f"k{n}", title="Job", payload={})
            self.store.publish("bench", message)
        start = time.perf_counter()
        self.scheduler.run_until_idle(max_steps=events + 10)
        return events / (time.perf_counter() - start)


def work_behind_ratios(tmp: Path, events: int, history: int, idle: int) -> dict[str, float]:
    """Median runs/s of interleaved batches on an empty store, one with `history` runs of
    history, and one with `idle` more workflows (the same disk, the same minutes)."""
    stores = {
        "empty": WorkBehind(tmp, history=0, idle=0),
        "history": WorkBehind(tmp, history=history, idle=0),
        "workflows": WorkBehind(tmp, history=0, idle=idle),
    }
    rates: dict[str, list[float]] = {name: [] for name in stores}
    for _ in range(5):
        for name, where in stores.items():
            rates[name].append(where.batch(max(events // 5, 20)))
    for where in stores.values():
        where.store.close()
    return {name: statistics.median(found) for name, found in rates.items()}


def drain_with_workers(url: str, workers: int, workflows: int, events: int, tmp: Path) -> float:
    """Committed runs per second when `workers` worker processes drain the backlog."""
    names = [f"w{i}" for i in range(workflows)]
    doubles = tmp / f"doubles-{uuid.uuid4().hex}.db"
    deploy(url, names, events, doubles)
    store = open_store(url)
    command = [
        sys.executable,
        "-m",
        "keep_sdk",
        "worker",
        "--store",
        url,
        "--doubles",
        str(doubles),
        "--isolation",
        "in-process",
        "--poll",
        "0.05",
        "--lease-ttl",
        "10",
    ]
    start = time.perf_counter()
    procs = [
        subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        for _ in range(workers)
    ]
    try:
        while any(
            store.list_events(name, status=status, limit=1)
            for name in names
            for status in (EventStatus.PENDING, EventStatus.RESERVED)
        ):
            time.sleep(0.2)
        elapsed = time.perf_counter() - start
    finally:
        for proc in procs:
            proc.terminate()
        for proc in procs:
            proc.wait(timeout=30)
    effects = len(Sheets(backing=doubles).effects("appendRow"))
    assert effects == events, f"{effects} effects for {events} events"
    store.close()
    return events / elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--events", type=int, default=300)
    parser.add_argument("--workflows", type=int, default=4)
    parser.add_argument("--raw", type=int, default=500, help="raw commits for the baseline")
    parser.add_argument("--postgres", default=os.environ.get(TEST_URL_ENV))
    parser.add_argument("--sqlite-only", action="store_true", help="skip PostgreSQL")
    parser.add_argument("--history", type=int, default=100_000, help="runs of history")
    parser.add_argument("--idle", type=int, default=99, help="idle workflows beside the bench")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp_dir:
        tmp = Path(tmp_dir)
        sqlite_url = f"sqlite:///{tmp / 'keep.db'}"
        baseline_store = SqlStore(sqlite_url)
        sqlite_raw = raw_commits(baseline_store, args.raw)
        baseline_store.close()
        sqlite_runs = runs_per_second(sqlite_url, args.events)
        with ProcessIsolation(prestart=1) as pool:
            pooled = runs_per_second(f"sqlite:///{tmp / 'pooled.db'}", args.events, pool)
        print(f"sqlite      raw commits/s {sqlite_raw:8.1f}")
        print(
            f"sqlite      consumer runs/s {sqlite_runs:6.1f}   "
            f"ratio {sqlite_runs / sqlite_raw:.3f} of raw commits"
        )
        print(
            f"sqlite      consumer runs/s, pooled worker {pooled:6.1f}   "
            f"ratio {pooled / sqlite_runs:.2f} of in-process (target >= 0.8)"
        )
        behind = work_behind_ratios(tmp, args.events, args.history, args.idle)
        empty, old, busy = behind["empty"], behind["history"], behind["workflows"]
        print(f"sqlite      runs/s empty store {empty:6.1f}")
        print(
            f"sqlite      runs/s with {args.history:,} runs of history {old:6.1f}  "
            f"ratio {old / empty:.2f} (target >= 0.9)"
        )
        print(
            f"sqlite      runs/s with {args.idle + 1} workflows {busy:6.1f}  "
            f"ratio {busy / empty:.2f} (target >= 0.9)"
        )

        if args.sqlite_only:
            return
        server = None
        if args.postgres:
            server = PostgresServer(admin_url=args.postgres)
        else:
            server = PostgresServer.start(tmp / "pg")
        try:
            pg_url = server.create_database("keep_bench")
            pg_store = SqlStore(pg_url)
            pg_raw = raw_commits(pg_store, args.raw)
            pg_store.close()
            pg_runs = runs_per_second(pg_url, args.events)
            print(f"postgresql  raw commits/s {pg_raw:8.1f}")
            print(
                f"postgresql  consumer runs/s {pg_runs:6.1f}   "
                f"ratio {pg_runs / pg_raw:.3f} of raw commits"
            )
            one = drain_with_workers(
                server.create_database("keep_bench_1"), 1, args.workflows, args.events, tmp
            )
            two = drain_with_workers(
                server.create_database("keep_bench_2"), 2, args.workflows, args.events, tmp
            )
            print(f"postgresql  1 worker  runs/s {one:6.1f}  ({args.workflows} workflows)")
            print(f"postgresql  2 workers runs/s {two:6.1f}  speed-up {two / one:.2f}x")
        finally:
            server.stop()


if __name__ == "__main__":
    main()
