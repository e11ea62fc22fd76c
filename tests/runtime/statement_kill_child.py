"""Run one run and SIGKILL the running process just before its N-th SQL statement or commit.

Usage: python statement_kill_child.py

It imports the SDK once, then reads requests from standard input, one JSON array per
line: ``[STORE_URL, BACKING, N, KIND, OUT]`` (KIND is ``consumer`` or ``producer``). Each request
runs in a process forked for it, with standard output and error written to ``OUT``
and ``OUT.err``; the server answers with that process's exit code on a line of its
own (-9 when the kill landed). A fork starts the run with nothing open: no store,
connection or thread exists in the server.

Statements are counted with SQLAlchemy's engine events on the store's engine, from
below the store, so the kill lands inside or between the store's transactions
wherever they are: ``before_cursor_execute`` for every statement, ``begin`` on
PostgreSQL (psycopg opens transactions implicitly; SQLite's ``BEGIN IMMEDIATE`` is a
statement of its own) and ``commit`` just before each transaction commits. With N
larger than the run's count the process prints what it counted (one per line) and
exits 0.
"""

from __future__ import annotations

import json
import os
import signal
import sys
import traceback
from typing import Any

import psycopg
import sqlalchemy.dialects.postgresql
import sqlalchemy.dialects.sqlite
from sqlalchemy import event

from keep_sdk.connectors import ConnectorSet
from keep_sdk.connectors.builtin import Gmail, Sheets, Slack
from keep_sdk.plugins import KeepPlugins
from keep_sdk.runtime import Runtime
from keep_sdk.sandbox import InProcessIsolation
from keep_sdk.stores import SqlStore

PRELOADED = (psycopg, sqlalchemy.dialects.postgresql, sqlalchemy.dialects.sqlite)
"""Imported by the server so each forked run starts warm."""


def main(store_url: str, backing: str, n: int, kind: str) -> None:
    store = SqlStore(store_url)
    seen: list[str] = []

    def count(statement: str) -> None:
        seen.append(" ".join(statement.split())[:60])
        if len(seen) == n:
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


def _forked(store_url: str, backing: str, n: int, kind: str, out: str) -> None:
    with open(out, "w") as stdout, open(out + ".err", "w") as stderr:
        os.dup2(stdout.fileno(), 1)
        os.dup2(stderr.fileno(), 2)
        code = 0
        try:
            main(store_url, backing, n, kind)
        except BaseException:
            traceback.print_exc()
            code = 1
        sys.stdout.flush()
        sys.stderr.flush()
    os._exit(code)


def serve() -> None:
    for line in sys.stdin:
        store_url, backing, n, kind, out = json.loads(line)
        pid = os.fork()
        if pid == 0:
            _forked(store_url, backing, int(n), kind, out)
        _, status = os.waitpid(pid, 0)
        print(os.waitstatus_to_exitcode(status), flush=True)


if __name__ == "__main__":
    serve()
