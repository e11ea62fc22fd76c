"""Run one consumer run and SIGKILL this process just before its N-th SQL statement.

Usage: python statement_kill_child.py STORE_URL BACKING N

Statements are counted with SQLAlchemy's ``before_cursor_execute`` event on the
store's engine, from below the store, so the kill lands inside or between the
store's transactions wherever they are. With N larger than the run's statement
count the process prints the statements it executed (one per line) and exits 0.
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
from keep_sdk.stores import SqlStore


def main(store_url: str, backing: str, n: str) -> None:
    store = SqlStore(store_url)
    seen: list[str] = []

    def before(conn: Any, cursor: Any, statement: str, *args: Any) -> None:
        seen.append(" ".join(statement.split())[:60])
        if len(seen) == int(n):
            os.kill(os.getpid(), signal.SIGKILL)

    event.listen(store.engine, "before_cursor_execute", before)
    runtime = Runtime(
        store,
        ConnectorSet([Gmail(backing=backing), Sheets(backing=backing), Slack(backing=backing)]),
        load_workflow=KeepPlugins(load_entry_points=False).load_workflow,
    )
    runtime.run_consumer("mail-to-sheet", "appendRow")
    print("\n".join(seen))


if __name__ == "__main__":
    main(*sys.argv[1:4])
