"""Cost of the SQLite commit mark (issue 12, item 7): one raise of the mark, and the store's
commit points of a consumer run with one mutation, with and without the mark.

    python benchmarks/commit_mark.py [--runs 200] [--rounds 5]

The runs go through `SqlStore` on a SQLite file with the default ``synchronous=FULL``, in
interleaved rounds (marked, unmarked, marked, …) so load on the machine hits both alike;
"unmarked" is the same store with its mark switched off. Prints the median of each.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

from keep_sdk.model import HandlerKind, PrepareResult, Reservation
from keep_sdk.stores import HandlerSpec, Publication, SqlStore
from keep_sdk.stores.sql._mark import CommitMark

HANDLERS = (HandlerSpec(name="c", kind=HandlerKind.CONSUMER, subscribe=["in"]),)


def _raise_mark(folder: Path, count: int) -> list[float]:
    mark = CommitMark(folder / "alone.db")
    took = []
    for n in range(1, count + 1):
        started = time.perf_counter()
        mark.advance(n)
        took.append(time.perf_counter() - started)
    mark.close()
    return took


def _runs(path: Path, count: int, *, marked: bool) -> float:
    store = SqlStore(f"sqlite:///{path}")
    if not marked:
        store._mark = None
    store.deploy("w", "x", {"topics": ["in"]}, handlers=HANDLERS)
    started = time.perf_counter()
    for n in range(count):
        mid = f"m{n}"
        store.publish("w", Publication(topic="in", message_id=mid, title=mid))
        run = store.begin_run("w", "c", HandlerKind.CONSUMER)
        store.save_prepare_result(
            run.id, PrepareResult(reservations=[Reservation(topic="in", ids=[mid])])
        )
        entry = store.record_mutation_intent(
            run.id, connector="s", operation="o", params={}, idempotency_key=run.id
        )
        store.record_mutation_applied(entry.id, {"n": n})
        store.commit_consumer_run(run.id)
    elapsed = (time.perf_counter() - started) / count
    store.close()
    return elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder)
        raises = _raise_mark(root, 20_000)
        print(
            f"raise the mark: median {statistics.median(raises) * 1e6:.1f} µs, "
            f"p99 {sorted(raises)[int(len(raises) * 0.99)] * 1e6:.1f} µs"
        )
        times: dict[bool, list[float]] = {True: [], False: []}
        for r in range(args.rounds):
            for marked in (True, False):
                times[marked].append(_runs(root / f"{r}-{marked}.db", args.runs, marked=marked))
        for marked in (True, False):
            label = "with the mark" if marked else "without it"
            median_ms = statistics.median(times[marked]) * 1e3
            print(f"consumer run, store only, {label}: {median_ms:.2f} ms")


if __name__ == "__main__":
    main()
