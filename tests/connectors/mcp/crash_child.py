"""Run one consumer run of the notes flow and SIGKILL this process at a chosen point.

Usage: python crash_child.py STORE_URL STATE POINT, where POINT is
``after:<store method>`` or ``server:<fault>`` (crash_before / crash_after of the
MCP server inside the call).
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from keep_sdk.stores import open_store
from tests.connectors.mcp.flow import notes_connector, runtime
from tests.connectors.mcp.servers import set_fault
from tests.runtime.crash_child import KillAfter


def main(store_url: str, state_path: str, point: str) -> None:
    state = Path(state_path)
    store: Any = open_store(store_url)
    where, _, what = point.partition(":")
    if where == "after":
        store = KillAfter(store, what)
    else:
        set_fault(state, what)
    connector = notes_connector(state)
    runtime(store, connector).run_consumer("notes-flow", "addNote")
    connector.close()
    print("finished without being killed")


if __name__ == "__main__":
    main(*sys.argv[1:4])
