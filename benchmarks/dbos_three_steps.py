"""DBOS's three-step workflow on its SQLite system database, driven over stdin.

Runs in the benchmark's own environment, never in keep_sdk's (``benchmarks/runtime.py``
creates it: ``python -m venv benchmarks/.venv-dbos && benchmarks/.venv-dbos/bin/pip
install 'dbos>=2,<3'``). Usage::

    benchmarks/.venv-dbos/bin/python benchmarks/dbos_three_steps.py DB_FILE

Each line ``N`` read from stdin runs N workflows one after another and answers one
line: workflows per second. The system database is put in WAL mode (DBOS leaves the
journal mode alone) with SQLite's default synchronous=FULL, as keep_sdk's store is.
"""

from __future__ import annotations

import sqlite3
import sys
import time

from dbos import DBOS, DBOSConfig


@DBOS.step()
def fetch(n: int) -> int:
    return n + 1


@DBOS.step()
def transform(n: int) -> int:
    return n * 2


@DBOS.step()
def record(n: int) -> int:
    return n - 1


@DBOS.workflow()
def three_steps(n: int) -> int:
    return record(transform(fetch(n)))


def main() -> None:
    path = sys.argv[1]
    with sqlite3.connect(path) as conn:
        conn.execute("PRAGMA journal_mode=WAL")
    config: DBOSConfig = {"name": "bench", "system_database_url": f"sqlite:///{path}"}
    DBOS(config=config)
    DBOS.launch()
    done = 0
    print("ready", flush=True)
    for line in sys.stdin:
        count = int(line)
        start = time.perf_counter()
        for i in range(count):
            assert three_steps(done + i) == (done + i + 1) * 2 - 1
        done += count
        print(f"{count / (time.perf_counter() - start):.3f}", flush=True)
    DBOS.destroy()


if __name__ == "__main__":
    main()
