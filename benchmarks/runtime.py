"""Runtime benchmark: committed consumer runs per second end to end, against DBOS, 1 vs 2 workers.

    python benchmarks/runtime.py [--events 300] [--workflows 8] [--rounds 8] [--pooled]
                                 [--max-runs N] [--postgres URL] [--sqlite-only]
                                 [--only sqlite|dbos|aggregate|floor|workers]

``--only`` runs one part: ``sqlite`` (items 1-4), ``dbos`` (5 and 6), ``aggregate`` (7),
``lanes`` (what a worker's lanes buy, with the connector answering at once and after
20 ms: runs/s and CPU per run with 1, 4 and --workflows lanes),
``floor`` (6 alone), ``workers`` (8); without it every part runs. ``--events 100
--rounds 3`` runs any part in a few minutes.

End to end means the reference scheduler picks the work, the runtime runs
prepare, mutate (a ledgered ``sheets.appendRow`` on the built-in double) and
next in real QuickJS (in-process isolation), and the real store commits every
checkpoint. For SQLite (a temporary file, WAL, synchronous=FULL) and
PostgreSQL (a server started for the run, or --postgres / KEEP_TEST_POSTGRES_URL)
it prints:

1. the raw commit rate of the same database (one-row insert transactions per
   second through the store's engine): the baseline;
2. committed consumer runs per second through ``Scheduler.run_until_idle`` and
   the ratio runs/s ÷ raw commits/s (a run takes 3 to 5 commit points plus the
   scheduler's reads, so about 1/8 to 1/15 is what the design allows);
3. SQLite: the same with the default pooled worker process (ProcessIsolation),
   as a ratio to in-process (target: within 1.25x, a ratio >= 0.8);
4. SQLite: how the rate holds up with work behind it: runs/s with 100,000
   committed runs (and their ledger entries) of history, and with 99 more idle
   workflows deployed, each as a ratio to a store without them (five interleaved
   batches each, medians);
5. DBOS side by side: DBOS's three-step workflow (``benchmarks/dbos_three_steps.py``)
   on its SQLite system database (WAL, synchronous=FULL) in the benchmark's own
   environment, ``benchmarks/.venv-dbos`` (``pip install 'dbos>=3.4,<4'``, created on
   first use and recreated when it does not hold DBOS 3; DBOS is never a keep_sdk
   dependency; its version is printed). ``--rounds`` rounds (8) each run ``--events``
   keep_sdk consumer runs in process (and, with ``--pooled``, with the pooled worker)
   and as many DBOS workflows back to back, DBOS last in even rounds and first in odd
   ones. Printed: median runs/s and CPU ms per run of each side (keep: this process's
   rusage, plus its live and reaped children for the pooled worker; DBOS: its driver's
   ``time.process_time()`` per batch), and keep/DBOS per round for runs/s (target >= 2)
   and for CPU per run (target <= 0.5): median, min and max over the rounds, not a
   ratio of medians; the 1-minute load average before and after;
6. where one run's wall time goes, by layer (the scheduler, the sandbox's three phases,
   the store's commit points, the connector call, the rest), and the floor of the design
   measured in the same run: three QuickJS phases evaluating the workflow, in bare
   contexts and in a kept realm as the sandbox runs them (limits, every reachable object
   frozen once, a new phase's state, the module from cached bytecode), and one one-row
   fsync commit in plain sqlite3 per commit point the store took per run; printed after
   DBOS (with what the floor would be against DBOS) or alone with ``--only floor``;
7. many workflows at once (``--only aggregate --workflows 16``): keep_sdk with
   --workflows workflows deployed and each round's --events jobs spread over them,
   drained by one in-process scheduler one workflow at a time and --concurrency
   (default --workflows) at once, with the write transactions per group commit, and with
   ``--pooled`` --concurrency at once with the pooled worker (``keep worker``'s default;
   CPU counts the worker processes); DBOS running as many workflows, --workflows at a
   time on as many threads; rounds, ratios and CPU as in 5 (target >= 3);
8. PostgreSQL only: the same backlog spread over --workflows workflows (8), drained
   by 1 and then by 2 ``keep worker`` processes (leases, heartbeats), alternated
   three times: runs/s, the speed-up of 2 over 1 (at most 2 on 2 cores; the
   workers and the database share those cores) and the workers' CPU seconds per
   run (target: 2 workers within 1.2x of one: they divide the work, they do not
   contend for it).

``--no-realms`` runs every in-process phase in a context of its own instead of the
workflow version's kept realm (docs/sandbox.md, "Realms"): the comparison for them.
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import os
import resource
import shutil
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Callable
from pathlib import Path

import quickjs
import sqlalchemy as sa

from keep_sdk.conformance.postgres import TEST_URL_ENV, PostgresServer
from keep_sdk.connectors import ConnectorSet, builtin_manifest
from keep_sdk.connectors.builtin import FaultKind, Gmail, Sheets, Slack
from keep_sdk.model import EventStatus, HandlerPhase, HostPolicy, RunStatus
from keep_sdk.plugins import KeepPlugins
from keep_sdk.runtime import Runtime
from keep_sdk.sandbox import InProcessIsolation, Isolation, ProcessIsolation
from keep_sdk.sandbox.bytecode import ModuleLoader, PreludeLoader
from keep_sdk.sandbox.engine import prelude_source
from keep_sdk.sandbox.process import MAX_RUNS
from keep_sdk.sandbox.realm import realm_policy
from keep_sdk.sandbox.setup import config_text, phase_fields, setup_for
from keep_sdk.sandbox.stack import safe_stack_bytes
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


def pooled_worker(prestart: int, max_runs: int) -> ProcessIsolation:
    """The pooled worker ``keep worker`` runs phases in (`ProcessIsolation`), `prestart`
    worker processes started at once and `max_runs` phases each (``--max-runs``)."""
    return ProcessIsolation(prestart=prestart, max_runs=max_runs)


class WorkBehind:
    """The bench workflow (and `workflows` - 1 more like it) on a SQLite store with
    `history` runs of history and `idle` other workflows deployed; `batch` measures
    committed runs/s of a fresh backlog spread over the busy workflows, drained by one
    scheduler in this process (`isolation`: in process unless given)."""

    def __init__(
        self,
        tmp: Path,
        *,
        history: int,
        idle: int,
        workflows: int = 1,
        isolation: Isolation | None = None,
        concurrency: int = 1,
    ) -> None:
        self.busy = ["bench"] + [f"bench{i}" for i in range(1, workflows)]
        pooled = "-pooled" if isolation is not None else ""
        name = f"behind-{history}-{idle}-{workflows}{pooled}-{concurrency}.db"
        url = f"sqlite:///{tmp / name}"
        deploy(url, self.busy + [f"idle{i}" for i in range(idle)], len(self.busy), None)
        store = open_store(url)
        assert isinstance(store, SqlStore)
        self.store = store
        self.pooled = isolation is not None
        self.sheets = Sheets(seed={"spreadsheets": {"jobs": {"rows": []}}})
        runtime = Runtime(
            store,
            ConnectorSet([Gmail(), self.sheets, Slack()]),
            load_workflow=KeepPlugins(load_entry_points=False).load_workflow,
            isolation=isolation or InProcessIsolation(),
        )
        self.scheduler = Scheduler(runtime, concurrency=concurrency)
        self.scheduler.run_until_idle()
        if history:
            copy_history(store, history)
        self.published = 0

    def batch(self, events: int) -> float:
        return self.timed_batch(events)[0]

    def timed_batch(self, events: int, *, exclude: tuple[int, ...] = ()) -> tuple[float, float]:
        """Committed runs/s of `events` new jobs, and the CPU seconds per run of this
        process (plus, when the sandbox is the pooled worker, of its child processes but
        the pids in `exclude`) while the scheduler drained them."""
        for _ in range(events):
            self.published += 1
            n = self.published
            message = Publication(topic="job.queued", message_id=f"k{n}", title="Job", payload={})
            self.store.publish(self.busy[n % len(self.busy)], message)
        cpu = own_cpu() + (children_cpu(exclude) if self.pooled else 0.0)
        start = time.perf_counter()
        done = self.scheduler.run_until_idle(max_steps=events + 10)
        elapsed = time.perf_counter() - start
        cpu = own_cpu() + (children_cpu(exclude) if self.pooled else 0.0) - cpu
        committed = sum(
            1 for a in done if a.run is not None and a.run.status is RunStatus.COMMITTED
        )
        assert committed == events, f"{committed} of {events} runs committed"
        return events / elapsed, cpu / events


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
    "begin_consumer_run",
    "record_mutation_applied_run",
    "commit_applied_consumer_run",
)
"""The store's commit points of a consumer run, separate and merged (those a store has)."""

CHECKPOINTS = "store: the commit points"


class _Timers:
    """Seconds spent in, and calls of, named layers (outermost call of a layer only),
    wrapped around live objects."""

    def __init__(self) -> None:
        self.seconds: dict[str, float] = {}
        self.calls: dict[str, int] = {}
        self._inside: set[str] = set()

    def wrap(self, owner: object, attribute: str, layer: str) -> None:
        inner = getattr(owner, attribute)

        def timed(*args: object, **kwargs: object) -> object:
            if layer in self._inside:
                return inner(*args, **kwargs)
            self._inside.add(layer)
            started = time.perf_counter()
            try:
                return inner(*args, **kwargs)
            finally:
                spent = time.perf_counter() - started
                self._inside.discard(layer)
                self.seconds[layer] = self.seconds.get(layer, 0.0) + spent
                self.calls[layer] = self.calls.get(layer, 0) + 1

        setattr(owner, attribute, timed)


def breakdown(tmp: Path, events: int) -> tuple[float, dict[str, float], float]:
    """Where one in-process consumer run's wall time goes: ms per run by layer, and the
    commit points the store took per run."""
    folder = tmp / "breakdown"
    folder.mkdir(exist_ok=True)
    where = WorkBehind(folder, history=0, idle=0)
    runtime = where.scheduler.runtime
    timers = _Timers()
    timers.wrap(where.scheduler, "step", "step")
    timers.wrap(runtime, "run_consumer", "run")
    timers.wrap(runtime.isolation, "run", "sandbox: three phases, host calls included")
    timers.wrap(runtime.connectors, "invoke", "connector call (sheets double)")
    for name in WRITES:
        if hasattr(where.store, name):
            timers.wrap(where.store, name, CHECKPOINTS)
    where.batch(5)
    timers.seconds.clear()
    timers.calls.clear()
    rate = where.batch(events)
    where.store.close()
    commits = timers.calls.get(CHECKPOINTS, 0) / events
    spent = {name: seconds / events * 1e3 for name, seconds in timers.seconds.items()}
    step, run = spent.pop("step"), spent.pop("run")
    spent["scheduler: planning, leases"] = step - run
    spent["runtime Python and store reads"] = run - sum(
        value for name, value in spent.items() if not name.startswith("scheduler")
    )
    if CHECKPOINTS in spent:
        spent[f"{CHECKPOINTS} ({commits:.0f} per run)"] = spent.pop(CHECKPOINTS)
    return rate, spent, commits


def hardened_phase_ms(rounds: int) -> float:
    """One phase's context as keep's sandbox prepares it, in ms (median of `rounds`): a
    kept realm (built once, untimed: a context with the policy's memory and stack limits,
    the decoy module, the prelude booted and every reachable object frozen) moved on to a
    new phase (``next``: the global object checked, fresh prelude state) and the bench
    workflow's module evaluated in it from its cached bytecode. No handler runs and no host
    call is made: what the engine's own loop adds is the glue, not the floor."""
    source = SCRIPT.replace("NAME", "bench")
    policy = HostPolicy()
    limits = policy.sandbox
    setup = setup_for(source, builtin_manifest(), policy, HandlerPhase.PREPARE)
    fields = phase_fields(log_budget=limits.max_log_bytes, determinism=None, reusable=True)
    config = config_text(
        setup.config_head, log_budget=limits.max_log_bytes, determinism=None, reusable=True
    )
    stack = safe_stack_bytes(limits.stack_bytes)
    prelude, modules = PreludeLoader(prelude_source()), ModuleLoader()

    def enter(function: object, *args: object) -> object:
        return function(*args)  # type: ignore[operator]

    context = quickjs.Context()
    context.set_memory_limit(limits.memory_bytes)
    context.set_max_stack_size(stack)
    context.module("export {};")
    while context.execute_pending_job():
        pass
    dispatch = prelude.load(context, enter)(config)
    phases: list[float] = []
    for _ in range(rounds + 1):
        started = time.perf_counter()
        if dispatch("next", setup.config_static, fields) != "":
            raise RuntimeError("the realm refused its next phase")
        modules.load(
            context, setup.marked.text, enter, memory_bytes=limits.memory_bytes, stack_bytes=stack
        )
        while context.execute_pending_job():
            pass
        phases.append(time.perf_counter() - started)
    return statistics.median(phases[1:]) * 1e3


def floor_ms(tmp: Path, rounds: int = 200) -> tuple[float, float, float]:
    """The costs a run cannot avoid, in ms: one fresh QuickJS context evaluating the
    bench workflow (bare: no prelude, no limits), a phase in a kept realm as keep's
    sandbox runs it (`hardened_phase_ms`), and one one-row commit in plain
    sqlite3 (WAL, synchronous=FULL: one fsync), medians of `rounds`."""
    source = SCRIPT.replace("NAME", "bench").replace("Keep.workflow", "(d => d)")
    phases: list[float] = []
    for _ in range(rounds):
        started = time.perf_counter()
        context = quickjs.Context()
        context.module(source)
        while context.execute_pending_job():
            pass
        phases.append(time.perf_counter() - started)
    hardened = hardened_phase_ms(rounds)
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
    return statistics.median(phases) * 1e3, hardened, statistics.median(commits) * 1e3


def print_floor(tmp: Path, events: int, dbos_rate: float | None = None) -> None:
    """The breakdown of a run, and the floor of this design: three phases (in bare contexts,
    and in a kept realm as the sandbox runs them) and one fsync per commit point the store
    took, one run at a time per workflow."""
    rate, spent, commits = breakdown(tmp, events)
    points = round(commits)
    phase, hardened, commit = floor_ms(tmp)
    total = 1e3 / rate
    print(f"floor       one consumer run {total:6.2f} ms ({rate:.1f} runs/s), by layer:")
    for name, value in sorted(spent.items(), key=lambda item: -item[1]):
        print(f"floor         {value:6.2f} ms  {100 * value / total:5.1f}%  {name}")
    for label, each in (("bare", phase), ("hardened", hardened)):
        least = 3 * each + points * commit
        print(
            f"floor       3 {label} phases {3 * each:.2f} ms + {points} one-row fsync commits "
            f"{points * commit:.2f} ms = {least:.2f} ms: at most {1e3 / least:.0f} runs/s"
        )
        if dbos_rate:
            print(
                f"floor       at the {label} floor keep/DBOS would be "
                f"{1e3 / least / dbos_rate:.2f}x"
            )
    if dbos_rate:
        print(f"floor       3x DBOS needs {1e3 / (3 * dbos_rate):.2f} ms per run")


def cpu_seconds(pid: int) -> float:
    """User + system CPU seconds a live process has used so far (Linux ``/proc``; the
    kernel's rusage accounting, read before the process is reaped)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def own_cpu() -> float:
    """User + system CPU seconds this process (every thread) has used so far."""
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def children_cpu(exclude: tuple[int, ...] = ()) -> float:
    """User + system CPU seconds of this process's children: those reaped so far
    (``RUSAGE_CHILDREN``) and the live ones (``/proc``), but the live pids in `exclude`."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    total = usage.ru_utime + usage.ru_stime
    for task in Path(f"/proc/{os.getpid()}/task").iterdir():
        for pid in (task / "children").read_text().split():
            if int(pid) not in exclude:
                with contextlib.suppress(FileNotFoundError, ProcessLookupError):
                    total += cpu_seconds(int(pid))
    return total


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


class WorkerProcesses:
    """One ``keep worker --processes N`` (in-process phases, one lane each) on a SQLite
    store of its own with `workflows` bench workflows, started once (``--processes 1``
    is one worker process, no supervisor); `timed_batch`
    measures committed runs/s of a fresh backlog spread over the workflows and the CPU
    of the supervisor and its worker processes while they drained it.

    The processes share the built-in doubles through their SQLite file, as ``keep
    worker`` does; it lives on tmpfs (``/dev/shm`` when there is one) so that the sheet
    stands for a remote service rather than for a second fsync per run, and it is emptied
    before each batch (the double rewrites its whole document on every call). The
    backlog is published while the workflows are paused; the clock starts when they
    are resumed and stops when no job is pending or reserved (looked at every 5 ms in
    plain sqlite3); each batch checks its jobs were each recorded once."""

    def __init__(self, tmp: Path, workflows: int, processes: int) -> None:
        self.busy = [f"proc{i}" for i in range(workflows)]
        self.processes = processes
        path = tmp / f"processes-{processes}.db"
        self.url = f"sqlite:///{path}"
        shm = Path("/dev/shm")
        self._shared = Path(tempfile.mkdtemp(dir=shm if shm.is_dir() else tmp))
        self.doubles = self._shared / "doubles.db"
        deploy(self.url, self.busy, 0, self.doubles)
        store = open_store(self.url)
        assert isinstance(store, SqlStore)
        self.store = store
        for name in self.busy:
            store.pause_workflow(name, actor="bench")
        self.sheets = Sheets(backing=self.doubles)
        self.count = sqlite3.connect(path, isolation_level=None)
        self.published = 0
        self.proc = subprocess.Popen(
            [
                *(sys.executable, "-m", "keep_sdk", "worker", "--store", self.url),
                *("--doubles", str(self.doubles), "--isolation", "in-process"),
                *("--poll", "0.02", "--processes", str(processes)),
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        self.expected = 1 if processes == 1 else processes + 1
        deadline = time.monotonic() + 120
        while len(self._pids()) < self.expected or len(self._present()) < processes:
            assert self.proc.poll() is None, "keep worker --processes ended"
            assert time.monotonic() < deadline, "the worker processes did not start"
            time.sleep(0.1)

    def _pids(self) -> list[int]:
        pids = [self.proc.pid]
        with contextlib.suppress(FileNotFoundError):
            for task in Path(f"/proc/{self.proc.pid}/task").iterdir():
                pids += [int(pid) for pid in (task / "children").read_text().split()]
        return pids

    def _present(self) -> set[str]:
        now = time.time()
        return {
            lease.owner
            for lease in self.store.list_leases()
            if lease.workflow.startswith("keep-worker:") and lease.expires_at.timestamp() > now
        }

    def _cpu(self) -> float:
        total = 0.0
        for pid in self._pids():
            with contextlib.suppress(FileNotFoundError, ProcessLookupError):
                total += cpu_seconds(pid)
        return total

    def _waiting(self) -> int:
        (left,) = self.count.execute(
            "SELECT count(*) FROM keep_events WHERE status IN ('pending', 'reserved')"
        ).fetchone()
        return int(left)

    def batch(self, events: int) -> float:
        return self.timed_batch(events)[0]

    def timed_batch(self, events: int) -> Measure:
        self.sheets.seed({**self.sheets.empty_state(), "spreadsheets": {"jobs": {"rows": []}}})
        for _ in range(events):
            self.published += 1
            n = self.published
            message = Publication(topic="job.queued", message_id=f"p{n}", title="Job", payload={})
            self.store.publish(self.busy[n % len(self.busy)], message)
        pids = self._pids()
        assert len(pids) == self.expected, "a worker process is missing"
        cpu = self._cpu()
        start = time.perf_counter()
        for name in self.busy:
            self.store.resume_workflow(name, actor="bench")
        while self._waiting():
            time.sleep(0.005)
        elapsed = time.perf_counter() - start
        cpu = self._cpu() - cpu
        assert self._pids() == pids, "a worker process was replaced during the batch"
        for name in self.busy:
            self.store.pause_workflow(name, actor="bench")
        effects = len(self.sheets.effects("appendRow"))
        assert effects == events, f"{effects} effects for {events} jobs"
        return events / elapsed, cpu / events

    def close(self) -> None:
        self.proc.terminate()
        self.proc.wait(timeout=60)
        self.count.close()
        self.store.close()
        shutil.rmtree(self._shared, ignore_errors=True)


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
DBOS_REQUIREMENT = "dbos>=3.4,<4"
DBOS_MAJOR = "3"


def dbos_installed(python: Path) -> str | None:
    """The DBOS version installed in the environment of `python`, or None."""
    if not python.exists():
        return None
    found = subprocess.run(
        [str(python), "-c", "from importlib.metadata import version; print(version('dbos'))"],
        capture_output=True,
        text=True,
    )
    return found.stdout.strip() or None if found.returncode == 0 else None


def dbos_python() -> Path:
    """The Python of the benchmark's own DBOS environment, (re)created when it does not
    hold DBOS 3 (DBOS is never a dependency of keep_sdk)."""
    python = DBOS_ENV / "bin" / "python"
    installed = dbos_installed(python)
    if installed is None or installed.split(".")[0] != DBOS_MAJOR:
        print(f"creating {DBOS_ENV} with {DBOS_REQUIREMENT} (had {installed})", file=sys.stderr)
        shutil.rmtree(DBOS_ENV, ignore_errors=True)
        subprocess.run([sys.executable, "-m", "venv", str(DBOS_ENV)], check=True)
        subprocess.run(
            [str(python), "-m", "pip", "install", "--quiet", DBOS_REQUIREMENT], check=True
        )
    return python


class Dbos:
    """DBOS's three-step workflow in its own process and environment, on a SQLite system
    database (WAL, synchronous=FULL) in the same folder as keep_sdk's store."""

    def __init__(self, tmp: Path) -> None:
        self.proc = subprocess.Popen(
            [str(dbos_python()), str(DBOS_DRIVER), str(tmp / "dbos.sqlite")],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
        )
        assert self.proc.stdout is not None
        ready, _, self.version = self.proc.stdout.readline().strip().partition(" ")
        assert ready == "ready", "DBOS did not start"

    def _ask(self, line: str, workflows: int) -> tuple[float, float]:
        assert self.proc.stdin is not None
        assert self.proc.stdout is not None
        self.proc.stdin.write(f"{line}\n")
        self.proc.stdin.flush()
        rate, cpu = self.proc.stdout.readline().split()
        return float(rate), float(cpu) / workflows

    def batch(self, workflows: int) -> tuple[float, float]:
        """Workflows/s of `workflows` run one after another, and the driver's CPU seconds
        per workflow."""
        return self._ask(str(workflows), workflows)

    def concurrent(self, workflows: int, width: int) -> tuple[float, float]:
        """The same with `width` workflows running at once (one thread each)."""
        return self._ask(f"C {workflows} {width}", workflows)

    def close(self) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        self.proc.wait(timeout=60)


Measure = tuple[float, float]
"""Runs (or workflows) per second and CPU seconds per run of one batch."""


def paired_rounds(
    keep: dict[str, Callable[[], Measure]], dbos: Callable[[], Measure], rounds: int
) -> tuple[dict[str, list[Measure]], list[Measure], tuple[float, float]]:
    """`rounds` rounds, each running every keep batch and the DBOS batch back to back,
    DBOS last in even rounds and first in odd ones; the measures per round and the
    1-minute load average before and after."""
    load_before = os.getloadavg()[0]
    ours: dict[str, list[Measure]] = {name: [] for name in keep}
    theirs: list[Measure] = []
    for round_ in range(rounds):
        if round_ % 2:
            theirs.append(dbos())
        for name, batch in keep.items():
            ours[name].append(batch())
        if not round_ % 2:
            theirs.append(dbos())
    return ours, theirs, (load_before, os.getloadavg()[0])


def spread(values: list[float]) -> str:
    """Median (min-max) of `values`."""
    return f"{statistics.median(values):.2f}x ({min(values):.2f}-{max(values):.2f})"


def print_rounds(
    part: str,
    ours: dict[str, list[Measure]],
    theirs: list[Measure],
    load: tuple[float, float],
    targets: tuple[float, float],
) -> None:
    """Median runs/s and CPU ms/run of each side, and the per-round ratios keep/DBOS
    (median, min, max over rounds: not a ratio of medians)."""
    rounds = len(theirs)
    print(
        f"{part:<11} DBOS workflows/s {statistics.median([r for r, _ in theirs]):6.1f}  "
        f"CPU {statistics.median([c for _, c in theirs]) * 1e3:5.2f} ms/workflow  "
        f"(medians of {rounds} rounds, load {load[0]:.2f} -> {load[1]:.2f})"
    )
    for name, measures in ours.items():
        rates = [rate / dbos[0] for (rate, _), dbos in zip(measures, theirs, strict=True)]
        cpus = [cpu / dbos[1] for (_, cpu), dbos in zip(measures, theirs, strict=True)]
        print(
            f"{part:<11} keep {name:<10} runs/s {statistics.median([r for r, _ in measures]):6.1f}"
            f"  CPU {statistics.median([c for _, c in measures]) * 1e3:5.2f} ms/run"
        )
        print(
            f"{part:<11}   keep/DBOS runs/s per round {spread(rates)} (target >= {targets[0]:g}); "
            f"CPU per run {spread(cpus)} (target <= {targets[1]:g})"
        )
        print(
            f"{part:<11}   per round: keep/DBOS runs/s "
            + " ".join(f"{ratio:.2f}" for ratio in rates)
            + "; DBOS workflows/s "
            + " ".join(f"{rate:.0f}" for rate, _ in theirs)
        )


def dbos_side_by_side(
    tmp: Path, events: int, rounds: int, pooled: bool, max_runs: int = MAX_RUNS
) -> None:
    """keep_sdk consumer runs (in process, and with the pooled worker when `pooled`) and
    DBOS three-step workflows one after another, `events` of each per round, back to back
    in `rounds` rounds on the same disk; then the floor."""
    keep = WorkBehind(tmp, history=0, idle=0)
    dbos = Dbos(tmp)
    pool = pooled_worker(1, max_runs) if pooled else None
    arms: dict[str, Callable[[], Measure]] = {"in process": lambda: keep.timed_batch(events)}
    stores = [keep.store]
    try:
        if pool is not None:
            folder = tmp / "pooled"
            folder.mkdir()
            pooled_keep = WorkBehind(folder, history=0, idle=0, isolation=pool)
            stores.append(pooled_keep.store)
            pid = (dbos.proc.pid,)
            arms["pooled"] = lambda: pooled_keep.timed_batch(events, exclude=pid)
            pooled_keep.batch(5)
        keep.batch(5)
        dbos.batch(5)
        ours, theirs, load = paired_rounds(arms, lambda: dbos.batch(events), rounds)
    finally:
        dbos.close()
        for store in stores:
            store.close()
        if pool is not None:
            pool.close()
    print(f"dbos        DBOS {dbos.version}, SQLite WAL synchronous=FULL, {events} a side a round")
    print_rounds("dbos", ours, theirs, load, (2, 0.5))
    print_floor(tmp, events, statistics.median([rate for rate, _ in theirs]))


def aggregate(
    tmp: Path,
    events: int,
    workflows: int,
    rounds: int,
    concurrency: int,
    pooled: bool,
    max_runs: int = MAX_RUNS,
    processes: int = 0,
) -> None:
    """`workflows` workflows at once: keep_sdk with `workflows` deployed and each round's
    `events` jobs spread over them, drained by one scheduler in process, one workflow at a
    time and `concurrency` at once (`Scheduler(concurrency=…)`, SQLite group commit), and
    with `pooled` also `concurrency` at once with the pooled worker (`keep worker`'s
    default: each lane's phases in a worker process of its own), and with `processes`
    by ``keep worker --processes 1`` and ``--processes N`` (`WorkerProcesses`); DBOS
    running `events` three-step workflows `workflows` at a time (one thread each); back
    to back in `rounds` rounds."""
    folder = tmp / "aggregate"
    folder.mkdir()
    pool = pooled_worker(concurrency, max_runs) if pooled else None
    one = WorkBehind(folder, history=0, idle=0, workflows=workflows)
    many = WorkBehind(folder, history=0, idle=0, workflows=workflows, concurrency=concurrency)
    arms = {
        "one at a time": one,
        f"{concurrency} at once": many,
    }
    if pool is not None:
        arms[f"{concurrency} pooled"] = WorkBehind(
            folder, history=0, idle=0, workflows=workflows, concurrency=concurrency, isolation=pool
        )
    dbos = Dbos(folder)
    exclude = (dbos.proc.pid,)
    workers = {
        f"{count} process{'es' if count > 1 else ''}": WorkerProcesses(folder, workflows, count)
        for count in ((1, processes) if processes else ())
    }
    try:
        for arm in arms.values():
            arm.batch(workflows)
        for worker in workers.values():
            worker.batch(workflows)
        dbos.concurrent(workflows, workflows)
        before = many.store.group_commits
        batches_of: dict[str, Callable[[], Measure]] = {
            name: functools.partial(arm.timed_batch, events, exclude=exclude)
            for name, arm in arms.items()
        }
        for name, worker in workers.items():
            batches_of[name] = functools.partial(worker.timed_batch, events)
        ours, theirs, load = paired_rounds(
            batches_of, lambda: dbos.concurrent(events, workflows), rounds
        )
        batches, writes = (a - b for a, b in zip(many.store.group_commits, before, strict=True))
    finally:
        dbos.close()
        for arm in arms.values():
            arm.store.close()
        for worker in workers.values():
            worker.close()
        if pool is not None:
            pool.close()
    print(
        f"aggregate   DBOS {dbos.version}, {workflows} workflows, {events} runs a side a round "
        f"(DBOS: {workflows} threads; keep: one scheduler, {concurrency} lanes or one)"
    )
    print(
        f"aggregate   {concurrency} at once: {writes} write transactions in {batches} commits "
        f"({writes / max(batches, 1):.2f} per fsync)"
    )
    print_rounds("aggregate", ours, theirs, load, (3, 0.5))


def lanes_part(tmp: Path, events: int, workflows: int, rounds: int) -> None:
    """What lanes buy: `workflows` workflows, each round's `events` jobs spread over them,
    drained by one scheduler with 1, 4 and `workflows` lanes, with the connector answering
    at once and after 20 ms (a remote service's latency: ``sheets.appendRow`` sleeps);
    runs/s and CPU per run, medians of `rounds` interleaved rounds, and the write
    transactions per commit."""
    widths = sorted({1, 4, workflows})
    for latency_ms in (0, 20):
        folder = tmp / f"lanes-{latency_ms}"
        folder.mkdir()
        arms = {
            width: WorkBehind(folder, history=0, idle=0, workflows=workflows, concurrency=width)
            for width in widths
        }
        try:
            for arm in arms.values():
                if latency_ms:
                    arm.sheets.faults.inject(
                        FaultKind.SLOW, operation="appendRow", times=None, delay_s=latency_ms / 1000
                    )
                arm.batch(workflows)
            measured: dict[int, list[Measure]] = {width: [] for width in widths}
            before = {width: arm.store.group_commits for width, arm in arms.items()}
            for _ in range(rounds):
                for width, arm in arms.items():
                    measured[width].append(arm.timed_batch(events))
            for width, arm in arms.items():
                batches, writes = (
                    a - b for a, b in zip(arm.store.group_commits, before[width], strict=True)
                )
                rate = statistics.median(r for r, _ in measured[width])
                cpu = statistics.median(c for _, c in measured[width])
                one = statistics.median(r for r, _ in measured[widths[0]])
                print(
                    f"lanes       connector {latency_ms:>2} ms, {width:>2} lanes: "
                    f"runs/s {rate:7.1f} ({rate / one:.2f}x one lane)  "
                    f"CPU {cpu * 1000:6.2f} ms/run  "
                    f"{writes / max(batches, 1):.2f} writes per commit"
                )
        finally:
            for arm in arms.values():
                arm.scheduler.close()
                arm.store.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--events", type=int, default=300)
    parser.add_argument("--workflows", type=int, default=8)
    parser.add_argument("--raw", type=int, default=500, help="raw commits for the baseline")
    parser.add_argument("--postgres", default=os.environ.get(TEST_URL_ENV))
    parser.add_argument("--sqlite-only", action="store_true", help="skip PostgreSQL")
    parser.add_argument(
        "--only",
        choices=("sqlite", "dbos", "aggregate", "floor", "workers", "lanes"),
        help="one part: the SQLite figures, DBOS side by side (with the floor), --workflows "
        "workflows at once against DBOS, where a run's time goes and the floor, or 1 vs 2 "
        "workers",
    )
    parser.add_argument(
        "--rounds", type=int, default=8, help="rounds of the DBOS and aggregate comparisons"
    )
    parser.add_argument(
        "--pooled",
        action="store_true",
        help="DBOS side by side and aggregate: also keep's pooled worker",
    )
    parser.add_argument(
        "--no-realms",
        action="store_true",
        help="every phase in a context of its own (in process only): the comparison for realms",
    )
    parser.add_argument(
        "--concurrency",
        type=int,
        default=None,
        help="aggregate: the scheduler's lanes (default: --workflows)",
    )
    parser.add_argument(
        "--max-runs",
        type=int,
        default=MAX_RUNS,
        help=f"phases a pooled worker serves before it is replaced (default {MAX_RUNS})",
    )
    parser.add_argument(
        "--processes",
        type=int,
        default=0,
        help="aggregate: also keep worker --processes 1 and --processes N (on tmpfs doubles)",
    )
    parser.add_argument("--history", type=int, default=100_000, help="runs of history")
    parser.add_argument("--idle", type=int, default=99, help="idle workflows beside the bench")
    args = parser.parse_args()
    if args.no_realms:
        realm_policy.after = None
    with tempfile.TemporaryDirectory() as tmp_dir:
        tmp = Path(tmp_dir)
        if args.only in (None, "sqlite"):
            sqlite_part(args, tmp)
        if args.only in (None, "dbos"):
            dbos_side_by_side(tmp, args.events, args.rounds, args.pooled, args.max_runs)
        if args.only in (None, "aggregate"):
            lanes = args.concurrency or args.workflows
            aggregate(
                tmp,
                args.events,
                args.workflows,
                args.rounds,
                lanes,
                args.pooled,
                args.max_runs,
                args.processes,
            )
        if args.only == "floor":
            print_floor(tmp, args.events)
        if args.only == "lanes":
            lanes_part(tmp, args.events, args.workflows, args.rounds)
        if args.only in (None, "workers") and not args.sqlite_only:
            postgres_part(args, tmp)


def sqlite_part(args: argparse.Namespace, tmp: Path) -> None:
    """Raw commits, runs/s in process and pooled, and with work behind, on SQLite."""
    sqlite_url = f"sqlite:///{tmp / 'keep.db'}"
    baseline_store = SqlStore(sqlite_url)
    sqlite_raw = raw_commits(baseline_store, args.raw)
    baseline_store.close()
    sqlite_runs = runs_per_second(sqlite_url, args.events)
    with pooled_worker(1, args.max_runs) as pool:
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
