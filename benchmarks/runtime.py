"""Runtime benchmark: committed consumer runs per second end to end, and 1 vs 2 workers.

    python benchmarks/runtime.py [--events 300] [--workflows 8] [--postgres URL]
                                 [--only sqlite|dbos|floor|workers]

End to end means the reference scheduler picks the work, the runtime runs
prepare, mutate (a ledgered ``sheets.appendRow`` on the built-in double) and
next in real QuickJS (in-process isolation), and the real store commits every
checkpoint. For SQLite (a temporary file, WAL, synchronous=FULL) and
PostgreSQL (a server started for the run, or --postgres / KEEP_TEST_POSTGRES_URL)
it prints:

1. the raw commit rate of the same database (one-row insert transactions per
   second through the store's engine): the baseline;
2. committed consumer runs per second through ``Scheduler.run_until_idle`` and
   the ratio runs/s ÷ raw commits/s (a run takes 5 commit points plus the
   scheduler's reads, so about 1/8 to 1/15 is what the design allows);
3. SQLite: the same with the default pooled worker process (ProcessIsolation),
   as a ratio to in-process (target: within 1.25x, a ratio >= 0.8);
4. SQLite: how the rate holds up with work behind it: runs/s with 100,000
   committed runs (and their ledger entries) of history, and with 99 more idle
   workflows deployed, each as a ratio to a store without them (five interleaved
   batches each, medians);
5. DBOS side by side: DBOS's three-step workflow (``benchmarks/dbos_three_steps.py``)
   on its SQLite system database (WAL) in the benchmark's own environment,
   ``benchmarks/.venv-dbos`` (created on first use with ``pip install 'dbos>=2,<3'``;
   DBOS is never a keep_sdk dependency), in batches interleaved with keep_sdk
   consumer runs on the same disk; keep/DBOS (target >= 3);
6. where one run's wall time goes, by layer (the scheduler, the sandbox's three phases,
   the five checkpoints, the connector call, the rest), and the floor of the design
   measured in the same run: three fresh QuickJS contexts evaluating the workflow and
   five one-row fsync commits in plain sqlite3; printed after DBOS (with what the floor
   would be against DBOS) or alone with ``--only floor``;
7. PostgreSQL only: the same backlog spread over --workflows workflows (8), drained
   by 1 and then by 2 ``keep worker`` processes (leases, heartbeats), alternated
   three times: runs/s, the speed-up of 2 over 1 (at most 2 on 2 cores; the
   workers and the database share those cores) and the workers' CPU seconds per
   run (target: 2 workers within 1.2x of one: they divide the work, they do not
   contend for it).
"""

from __future__ import annotations

import argparse
import os
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

import quickjs
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
        isolation=InProcessIsolation(),
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


WRITES = (
    "begin_run",
    "save_prepare_result",
    "record_mutation_intent",
    "record_mutation_applied",
    "commit_consumer_run",
)


class _Timers:
    """Seconds spent in named calls (outermost only), wrapped around live objects."""

    def __init__(self) -> None:
        self.seconds: dict[str, float] = {}

    def wrap(self, owner: object, attribute: str, layer: str) -> None:
        inner = getattr(owner, attribute)

        def timed(*args: object, **kwargs: object) -> object:
            started = time.perf_counter()
            try:
                return inner(*args, **kwargs)
            finally:
                spent = time.perf_counter() - started
                self.seconds[layer] = self.seconds.get(layer, 0.0) + spent

        setattr(owner, attribute, timed)


def breakdown(tmp: Path, events: int) -> tuple[float, dict[str, float]]:
    """Where one in-process consumer run's wall time goes: ms per run by layer."""
    folder = tmp / "breakdown"
    folder.mkdir(exist_ok=True)
    where = WorkBehind(folder, history=0, idle=0)
    runtime = where.scheduler.runtime
    timers = _Timers()
    timers.wrap(where.scheduler, "step", "step")
    timers.wrap(runtime, "run_consumer", "run")
    timers.wrap(runtime.isolation, "run", "sandbox: three phases in fresh contexts")
    timers.wrap(runtime.connectors, "invoke", "connector call (sheets double)")
    for name in WRITES:
        timers.wrap(where.store, name, "store: the five checkpoints (5 fsyncs)")
    where.batch(5)
    timers.seconds.clear()
    rate = where.batch(events)
    where.store.close()
    spent = {name: seconds / events * 1e3 for name, seconds in timers.seconds.items()}
    step, run = spent.pop("step"), spent.pop("run")
    spent["scheduler: planning, leases"] = step - run
    spent["runtime Python and store reads"] = run - sum(
        value for name, value in spent.items() if not name.startswith("scheduler")
    )
    return rate, spent


def floor_ms(tmp: Path, rounds: int = 200) -> tuple[float, float]:
    """The two costs a run cannot avoid, in ms: one fresh QuickJS context evaluating the
    bench workflow (a phase's isolation, without the host), and one one-row commit in
    plain sqlite3 (WAL, synchronous=FULL: one fsync), medians of `rounds`."""
    source = SCRIPT.replace("NAME", "bench").replace("Keep.workflow", "(d => d)")
    phases: list[float] = []
    for _ in range(rounds):
        started = time.perf_counter()
        context = quickjs.Context()
        context.module(source)
        while context.execute_pending_job():
            pass
        phases.append(time.perf_counter() - started)
    conn = sqlite3.connect(tmp / "floor.db", isolation_level=None)
    conn.execute("PRAGMA journal_mode=WAL")
    conn.execute("PRAGMA synchronous=FULL")
    conn.execute("CREATE TABLE IF NOT EXISTS floor (id INTEGER PRIMARY KEY, v TEXT)")
    commits: list[float] = []
    for i in range(rounds):
        started = time.perf_counter()
        conn.execute("BEGIN IMMEDIATE")
        conn.execute("INSERT INTO floor (v) VALUES (?)", (f"row {i}",))
        conn.execute("COMMIT")
        commits.append(time.perf_counter() - started)
    conn.close()
    return statistics.median(phases) * 1e3, statistics.median(commits) * 1e3


def print_floor(tmp: Path, events: int, dbos_rate: float | None = None) -> None:
    """The breakdown of a run, and the floor of this design: three fresh contexts and five
    fsyncs per run, one run at a time per workflow."""
    rate, spent = breakdown(tmp, events)
    phase, commit = floor_ms(tmp)
    total = 1e3 / rate
    print(f"floor       one consumer run {total:6.2f} ms ({rate:.1f} runs/s), by layer:")
    for name, value in sorted(spent.items(), key=lambda item: -item[1]):
        print(f"floor         {value:6.2f} ms  {100 * value / total:5.1f}%  {name}")
    least = 3 * phase + 5 * commit
    print(
        f"floor       3 bare phases {3 * phase:.2f} ms + 5 one-row fsync commits "
        f"{5 * commit:.2f} ms = {least:.2f} ms: at most {1e3 / least:.0f} runs/s"
    )
    if dbos_rate:
        print(
            f"floor       at that floor keep/DBOS would be {1e3 / least / dbos_rate:.2f}x; "
            f"3x DBOS needs {1e3 / (3 * dbos_rate):.2f} ms per run"
        )


def cpu_seconds(pid: int) -> float:
    """User + system CPU seconds a live process has used so far (Linux ``/proc``; the
    kernel's rusage accounting, read before the process is reaped)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def drain_with_workers(
    url: str, workers: int, workflows: int, events: int, tmp: Path
) -> tuple[float, float]:
    """Committed runs per second and worker CPU seconds per run when `workers` worker
    processes drain the backlog.

    The backlog waits in paused workflows until every worker has started and announced
    itself; the clock and the CPU count start when the workflows are resumed, so neither
    includes interpreter start-up.
    """
    names = [f"w{i}" for i in range(workflows)]
    doubles = tmp / f"doubles-{uuid.uuid4().hex}.db"
    deploy(url, names, events, doubles)
    store = open_store(url)
    for name in names:
        store.pause_workflow(name, actor="bench")
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
    procs = [
        subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        for _ in range(workers)
    ]
    try:
        deadline = time.monotonic() + 120
        while len({lease.owner for lease in store.list_leases()}) < workers:
            assert time.monotonic() < deadline, "the workers did not start"
            time.sleep(0.1)
        time.sleep(0.5)
        cpu_before = sum(cpu_seconds(proc.pid) for proc in procs)
        start = time.perf_counter()
        for name in names:
            store.resume_workflow(name, actor="bench")
        while any(
            store.list_events(name, status=status, limit=1)
            for name in names
            for status in (EventStatus.PENDING, EventStatus.RESERVED)
        ):
            time.sleep(0.1)
        elapsed = time.perf_counter() - start
        cpu = sum(cpu_seconds(proc.pid) for proc in procs) - cpu_before
    finally:
        for proc in procs:
            proc.terminate()
        for proc in procs:
            proc.wait(timeout=30)
    effects = len(Sheets(backing=doubles).effects("appendRow"))
    assert effects == events, f"{effects} effects for {events} events"
    store.close()
    return events / elapsed, cpu / events


def compare_workers(server: PostgresServer, workflows: int, events: int, tmp: Path) -> None:
    """1 vs 2 ``keep worker`` processes on PostgreSQL, alternated three times (medians)."""
    rates: dict[int, list[float]] = {1: [], 2: []}
    cpus: dict[int, list[float]] = {1: [], 2: []}
    for round_ in range(3):
        for workers in (1, 2):
            url = server.create_database(f"keep_bench_{workers}_{round_}")
            rate, cpu = drain_with_workers(url, workers, workflows, events, tmp)
            rates[workers].append(rate)
            cpus[workers].append(cpu)
    one, two = statistics.median(rates[1]), statistics.median(rates[2])
    cpu_one, cpu_two = statistics.median(cpus[1]), statistics.median(cpus[2])
    print(
        f"postgresql  1 worker  runs/s {one:6.1f}  CPU {cpu_one * 1000:6.1f} ms/run  "
        f"({workflows} workflows, {events} runs, median of 3)"
    )
    print(
        f"postgresql  2 workers runs/s {two:6.1f}  CPU {cpu_two * 1000:6.1f} ms/run  "
        f"speed-up {two / one:.2f}x, CPU per run {cpu_two / cpu_one:.2f}x of one worker "
        "(target <= 1.2)"
    )


DBOS_ENV = Path(__file__).parent / ".venv-dbos"
DBOS_DRIVER = Path(__file__).parent / "dbos_three_steps.py"
DBOS_REQUIREMENT = "dbos>=2,<3"


def dbos_python() -> Path:
    """The Python of the benchmark's own DBOS environment, created on first use (DBOS is
    never a dependency of keep_sdk)."""
    python = DBOS_ENV / "bin" / "python"
    if not python.exists():
        print(f"creating {DBOS_ENV} with {DBOS_REQUIREMENT} (once)", file=sys.stderr)
        subprocess.run([sys.executable, "-m", "venv", str(DBOS_ENV)], check=True)
        subprocess.run(
            [str(python), "-m", "pip", "install", "--quiet", DBOS_REQUIREMENT], check=True
        )
    return python


class Dbos:
    """DBOS's three-step workflow in its own process and environment, on a SQLite system
    database (WAL) in the same folder as keep_sdk's store; `batch` runs N workflows."""

    def __init__(self, tmp: Path) -> None:
        self.proc = subprocess.Popen(
            [str(dbos_python()), str(DBOS_DRIVER), str(tmp / "dbos.sqlite")],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
        )
        assert self.proc.stdout is not None
        assert self.proc.stdout.readline().strip() == "ready", "DBOS did not start"

    def batch(self, workflows: int) -> float:
        assert self.proc.stdin is not None
        assert self.proc.stdout is not None
        self.proc.stdin.write(f"{workflows}\n")
        self.proc.stdin.flush()
        return float(self.proc.stdout.readline())

    def close(self) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        self.proc.wait(timeout=60)

    def version(self) -> str:
        found = subprocess.run(
            [str(dbos_python()), "-m", "pip", "show", "dbos"],
            capture_output=True,
            text=True,
            check=True,
        )
        return next(
            line.split(":", 1)[1].strip()
            for line in found.stdout.splitlines()
            if line.startswith("Version:")
        )


def dbos_side_by_side(tmp: Path, events: int) -> None:
    """keep_sdk consumer runs (in process) and DBOS three-step workflows in alternating
    batches on the same disk; medians of five batches each."""
    keep = WorkBehind(tmp, history=0, idle=0)
    dbos = Dbos(tmp)
    size = max(events // 5, 20)
    keep.batch(5)
    dbos.batch(5)
    rates: dict[str, list[float]] = {"keep": [], "dbos": []}
    try:
        for _ in range(5):
            rates["keep"].append(keep.batch(size))
            rates["dbos"].append(dbos.batch(size))
        version = dbos.version()
    finally:
        dbos.close()
        keep.store.close()
    ours, theirs = statistics.median(rates["keep"]), statistics.median(rates["dbos"])
    print(f"sqlite      DBOS {version} three-step workflows/s {theirs:6.1f}  (WAL, interleaved)")
    print(
        f"sqlite      keep_sdk consumer runs/s {ours:6.1f}  "
        f"keep/DBOS {ours / theirs:.2f}x (target >= 3)"
    )
    print_floor(tmp, events, theirs)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--events", type=int, default=300)
    parser.add_argument("--workflows", type=int, default=8)
    parser.add_argument("--raw", type=int, default=500, help="raw commits for the baseline")
    parser.add_argument("--postgres", default=os.environ.get(TEST_URL_ENV))
    parser.add_argument("--sqlite-only", action="store_true", help="skip PostgreSQL")
    parser.add_argument(
        "--only",
        choices=("sqlite", "dbos", "floor", "workers"),
        help="one part: the SQLite figures, DBOS side by side (with the floor), where a "
        "run's time goes and the floor, or 1 vs 2 workers",
    )
    parser.add_argument("--history", type=int, default=100_000, help="runs of history")
    parser.add_argument("--idle", type=int, default=99, help="idle workflows beside the bench")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp_dir:
        tmp = Path(tmp_dir)
        if args.only in (None, "sqlite"):
            sqlite_part(args, tmp)
        if args.only in (None, "dbos"):
            dbos_side_by_side(tmp, args.events)
        if args.only == "floor":
            print_floor(tmp, args.events)
        if args.only in (None, "workers") and not args.sqlite_only:
            postgres_part(args, tmp)


def sqlite_part(args: argparse.Namespace, tmp: Path) -> None:
    """Raw commits, runs/s in process and pooled, and with work behind, on SQLite."""
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


def postgres_part(args: argparse.Namespace, tmp: Path) -> None:
    """Raw commits and runs/s on PostgreSQL, and 1 vs 2 workers."""
    if args.postgres:
        server = PostgresServer(admin_url=args.postgres)
    else:
        server = PostgresServer.start(tmp / "pg")
    try:
        if args.only is None:
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
        compare_workers(server, args.workflows, args.events, tmp)
    finally:
        server.stop()


if __name__ == "__main__":
    main()
