"""DBOS's three-step workflow on its SQLite system database, driven over stdin.

Runs in the benchmark's own environment, never in keep_sdk's (``benchmarks/runtime.py``
creates it: ``python -m venv benchmarks/.venv-dbos && benchmarks/.venv-dbos/bin/pip
install 'dbos>=3.4,<4'``). Usage::

    benchmarks/.venv-dbos/bin/python benchmarks/dbos_three_steps.py DB_FILE

Prints ``ready VERSION`` once DBOS has launched, then answers one line per command
read from stdin:

- ``N``: run N workflows one after another;
- ``C N K``: run N workflows with K at a time (K threads each calling the workflow,
  as K concurrent requests of an application would; K defaults to 16).

The answer is ``RATE CPU``: workflows per second (wall clock) and the CPU seconds this
process used for the batch (``time.process_time()``, every thread: the callers and
DBOS's own). DBOS 3 sets no SQLite pragmas of its own, so the system database's engine
is given one that puts every connection in WAL with synchronous=FULL, as keep_sdk's
store is.
"""

from __future__ import annotations

import sys
import time
from concurrent.futures import ThreadPoolExecutor
from importlib.metadata import version
from typing import Any

import sqlalchemy as sa
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


def checked(n: int) -> None:
    assert three_steps(n) == (n + 1) * 2 - 1


def engine_for(path: str) -> sa.Engine:
    """A SQLite engine whose connections use WAL and synchronous=FULL."""
    engine = sa.create_engine(f"sqlite:///{path}", pool_size=32, max_overflow=0)

    @sa.event.listens_for(engine, "connect")
    def pragmas(connection: Any, _record: Any) -> None:
        cursor = connection.cursor()
        cursor.execute("PRAGMA journal_mode=WAL")
        cursor.execute("PRAGMA synchronous=FULL")
        cursor.execute("PRAGMA busy_timeout=30000")
        cursor.close()

    return engine


def main() -> None:
    path = sys.argv[1]
    config: DBOSConfig = {
        "name": "bench",
        "system_database_url": f"sqlite:///{path}",
        "system_database_engine": engine_for(path),
    }
    DBOS(config=config)
    DBOS.launch()
    done = 0
    print(f"ready {version('dbos')}", flush=True)
    for line in sys.stdin:
        words = line.split()
        concurrent = words[0] == "C"
        count = int(words[1] if concurrent else words[0])
        width = int(words[2]) if concurrent and len(words) > 2 else 16
        numbers = range(done, done + count)
        cpu = time.process_time()
        start = time.perf_counter()
        if concurrent:
            with ThreadPoolExecutor(max_workers=width) as pool:
                list(pool.map(checked, numbers))
        else:
            for n in numbers:
                checked(n)
        elapsed = time.perf_counter() - start
        done += count
        print(f"{count / elapsed:.3f} {time.process_time() - cpu:.6f}", flush=True)
    DBOS.destroy()


if __name__ == "__main__":
    main()
