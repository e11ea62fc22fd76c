"""Store benchmark: commit points per second, and peek/reserve cost with a big backlog.

    python benchmarks/stores.py [--events 1000000] [--cycles 300] [--postgres URL]

For SQLite (a temporary file, WAL, synchronous=FULL) and PostgreSQL (a server
started for the run, or --postgres / KEEP_TEST_POSTGRES_URL) it prints:

1. the raw commit rate of the database: one-row insert transactions per second
   through the same engine the store uses (the baseline);
2. commit points per second: full consumer cycles (publish, begin, prepare +
   reserve, mutating, intent, applied, emitting, commit = 8 commit points) and
   the ratio to the baseline;
3. median latency of ``pending_events(limit=10)`` and of reserving one event
   (``save_prepare_result``) on a topic with 10 pending events, then on the
   same kind of topic after loading --events consumed events into it (bulk
   insert), and the ratio (target: within 10%).
"""

from __future__ import annotations

import argparse
import datetime as dt
import statistics
import tempfile
import time
import uuid
from collections.abc import Callable
from pathlib import Path

import sqlalchemy as sa

from keep_sdk.conformance.postgres import PostgresServer
from keep_sdk.model import HandlerKind, PrepareResult, Reservation, RunPhase, RunStatus
from keep_sdk.stores import HandlerSpec, Publication, SqlStore

HANDLERS = [HandlerSpec(name="c", kind=HandlerKind.CONSUMER, subscribe=["in"])]


def raw_commits(store: SqlStore, n: int) -> float:
    """Seconds for `n` one-row insert transactions through the store's engine."""
    table = sa.Table(
        "bench_raw",
        sa.MetaData(),
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("v", sa.Text),
    )
    table.create(store.engine, checkfirst=True)
    start = time.perf_counter()
    for i in range(n):
        with store.engine.begin() as conn:
            conn.execute(table.insert().values(v=f"row {i}"))
    return time.perf_counter() - start


def consumer_cycles(store: SqlStore, wf: str, first: int, n: int) -> float:
    """Seconds for `n` full consumer cycles (8 commit points each)."""
    start = time.perf_counter()
    for i in range(first, first + n):
        mid = f"m{i}"
        store.publish(wf, Publication(topic="in", message_id=mid, title=f"Event {i}"))
        run = store.begin_run(wf, "c", HandlerKind.CONSUMER)
        store.save_prepare_result(
            run.id, PrepareResult(reservations=[Reservation(topic="in", ids=[mid])])
        )
        store.advance_phase(run.id, RunPhase.MUTATING)
        entry = store.record_mutation_intent(
            run.id,
            connector="sheets",
            operation="appendRow",
            params={"i": i},
            idempotency_key=run.id,
        )
        store.record_mutation_applied(entry.id, {"row": i})
        store.advance_phase(run.id, RunPhase.EMITTING)
        store.commit_consumer_run(run.id, state={"n": i})
    return time.perf_counter() - start


def commit_rates(store: SqlStore, cycles: int, rounds: int = 10) -> tuple[float, float]:
    """(raw commits/s, commit points/s), measured in alternating rounds so load drifts cancel."""
    wf = f"bench-{uuid.uuid4().hex[:8]}"
    store.deploy(wf, "src", {}, handlers=HANDLERS)
    per_round = max(1, cycles // rounds)
    raw_seconds = points_seconds = 0.0
    for r in range(rounds):
        raw_seconds += raw_commits(store, 8 * per_round)
        points_seconds += consumer_cycles(store, wf, r * per_round, per_round)
    total = 8 * per_round * rounds
    return total / raw_seconds, total / points_seconds


def load_consumed(store: SqlStore, wf: str, n: int) -> float:
    start = time.perf_counter()
    stamp = dt.datetime.now(dt.UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    columns = (
        "id",
        "workflow",
        "topic",
        "message_id",
        "title",
        "payload",
        "status",
        "reserved_by",
        "created_by",
        "attempt",
        "created_at",
        "updated_at",
    )
    rows = (
        (
            f"evt_old_{wf}_{i}",
            wf,
            "in",
            f"old-{i}",
            f"Old event {i}",
            "null",
            "consumed",
            "run_old",
            None,
            0,
            stamp,
            stamp,
        )
        for i in range(n)
    )
    raw = store.engine.raw_connection()
    try:
        cursor = raw.cursor()
        if store.dialect == "postgresql":
            with cursor.copy(f"COPY keep_events ({', '.join(columns)}) FROM STDIN") as copy:
                for row in rows:
                    copy.write_row(row)
            cursor.execute("ANALYZE keep_events")
        else:
            placeholders = ", ".join("?" for _ in columns)
            cursor.execute("BEGIN IMMEDIATE")
            cursor.executemany(
                f"INSERT INTO keep_events ({', '.join(columns)}) VALUES ({placeholders})", rows
            )
            cursor.execute("COMMIT")
            cursor.execute("ANALYZE")
        raw.commit()
    finally:
        raw.close()
    return time.perf_counter() - start


def topic_with_pending(store: SqlStore, wf: str) -> None:
    store.deploy(wf, "src", {}, handlers=HANDLERS)
    for i in range(10):
        store.publish(wf, Publication(topic="in", message_id=f"p{i}", title=f"Pending {i}"))


def peek_ms(store: SqlStore, wf: str) -> float:
    start = time.perf_counter()
    store.pending_events(wf, "in", limit=10)
    return (time.perf_counter() - start) * 1000


def reserve_ms(store: SqlStore, wf: str) -> float:
    run = store.begin_run(wf, "c", HandlerKind.CONSUMER)
    first = store.pending_events(wf, "in", limit=1)[0].message_id
    start = time.perf_counter()
    store.save_prepare_result(
        run.id, PrepareResult(reservations=[Reservation(topic="in", ids=[first])])
    )
    elapsed = (time.perf_counter() - start) * 1000
    store.set_run_status(run.id, RunStatus.CRASHED, release_reservations=True)
    return elapsed


def medians(
    store: SqlStore, workflows: list[str], measure: Callable[[SqlStore, str], float], repeat: int
) -> list[float]:
    """Median of `measure` per workflow after a warm-up, the workflows taking turns so drifts
    cancel."""
    for wf in workflows:
        for _ in range(5):
            measure(store, wf)
    samples: list[list[float]] = [[] for _ in workflows]
    for _ in range(repeat):
        for i, wf in enumerate(workflows):
            samples[i].append(measure(store, wf))
    return [statistics.median(s) for s in samples]


def bench(label: str, url: str, args: argparse.Namespace) -> None:
    store = SqlStore(url)
    try:
        raw, ops = commit_rates(store, args.cycles)
        print(
            f"{label}: raw commits/s {raw:8.0f} | commit points/s {ops:8.0f} "
            f"| ratio {ops / raw:5.2f}"
        )
        before = f"before-{uuid.uuid4().hex[:8]}"
        topic_with_pending(store, before)
        (peek_before,) = medians(store, [before], peek_ms, args.repeat)
        (reserve_before,) = medians(store, [before], reserve_ms, args.repeat)
        empty, full = f"empty-{uuid.uuid4().hex[:8]}", f"full-{uuid.uuid4().hex[:8]}"
        store.deploy(full, "src", {}, handlers=HANDLERS)
        seconds = load_consumed(store, full, args.events)
        topic_with_pending(store, full)
        topic_with_pending(store, empty)
        peek_empty, peek_full = medians(store, [empty, full], peek_ms, args.repeat)
        reserve_empty, reserve_full = medians(store, [empty, full], reserve_ms, args.repeat)
        plan = store.explain_pending(full, "in", limit=10).replace("\n", " / ")
        print(f"{label}: loaded {args.events} consumed events into one topic in {seconds:.1f}s")
        print(
            f"{label}: peek(10) median ms: fresh db {peek_before:6.3f} | empty topic "
            f"{peek_empty:6.3f} | backlog topic {peek_full:6.3f} | backlog/empty "
            f"{peek_full / peek_empty:5.2f} | backlog/fresh {peek_full / peek_before:5.2f}"
        )
        print(
            f"{label}: reserve(1) median ms: fresh db {reserve_before:6.3f} | empty topic "
            f"{reserve_empty:6.3f} | backlog topic {reserve_full:6.3f} | backlog/empty "
            f"{reserve_full / reserve_empty:5.2f} | backlog/fresh "
            f"{reserve_full / reserve_before:5.2f}"
        )
        print(f"{label}: peek plan: {plan}")
    finally:
        store.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--events", type=int, default=1_000_000)
    parser.add_argument("--cycles", type=int, default=300)
    parser.add_argument("--repeat", type=int, default=200)
    parser.add_argument("--postgres", help="use this server instead of starting one")
    parser.add_argument("--skip-postgres", action="store_true")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="keep-bench-") as workdir:
        bench("sqlite", f"sqlite:///{workdir}/keep.db", args)
        if args.skip_postgres:
            return
        server = (
            PostgresServer(admin_url=args.postgres)
            if args.postgres
            else PostgresServer.from_env() or PostgresServer.start(Path(workdir) / "pg")
        )
        try:
            bench("postgresql", server.create_database("keep_bench"), args)
        finally:
            server.stop()


if __name__ == "__main__":
    main()
