"""Run one run and SIGKILL this process just before its N-th SQL statement or commit.

Usage: python statement_kill_child.py STORE_URL BACKING N [consumer|producer]

Statements are counted with SQLAlchemy's engine events on the store's engine, from
below the store, so the kill lands inside or between the store's transactions
wherever they are: ``before_cursor_execute`` for every statement, ``begin`` on
PostgreSQL (psycopg opens transactions implicitly; SQLite's ``BEGIN IMMEDIATE`` is a
statement of its own) and ``commit`` just before each transaction commits. With N
larger than the run's count the process prints what it counted (one per line) and
exits 0.
"""

from __future__ import annotations

import os
import signal
import sys
from typing import Any

from sqlalchemy import event

from keep_sdk.connectors import ConnectorSet
from keep_sdk.connectors.builtin import Gmail, Sheets, Slack
from keep_sdk.plugins import KeepPlugins
from keep_sdk.runtime import Runtime
from keep_sdk.sandbox import InProcessIsolation
from keep_sdk.stores import SqlStore


def main(store_url: str, backing: str, n: str, kind: str = "consumer") -> None:
    store = SqlStore(store_url)
    seen: list[str] = []

    def count(statement: str) -> None:
        seen.append(" ".join(statement.split())[:60])
        if len(seen) == int(n):
            os.kill(os.getpid(), signal.SIGKILL)

    def before(conn: Any, cursor: Any, statement: str, *args: Any) -> None:
        count(statement)

    event.listen(store.engine, "before_cursor_execute", before)
    event.listen(store.engine, "commit", lambda conn: count("COMMIT"))
    if store.dialect == "postgresql":
        event.listen(store.engine, "begin", lambda conn: count("BEGIN (implicit)"))
    runtime = Runtime(
        store,
        ConnectorSet([Gmail(backing=backing), Sheets(backing=backing), Slack(backing=backing)]),
        load_workflow=KeepPlugins(load_entry_points=False).load_workflow,
        isolation=InProcessIsolation(),
    )
    if kind == "producer":
        runtime.run_producer("mail-to-sheet", "pollEmail")
    else:
        runtime.run_consumer("mail-to-sheet", "appendRow")
    print("\n".join(seen))


if __name__ == "__main__":
    main(*sys.argv[1:5])
