"""Run one consumer run and SIGKILL this process at a chosen point (crash-matrix child).

Usage: python crash_child.py STORE_URL BACKING POINT

POINT is ``after:<store method>`` (killed right after that commit point returns)
or ``connector:<fault kind>`` (crash_before_effect / crash_after_effect inside the
connector call).
"""

from __future__ import annotations

import os
import signal
import sys
from typing import Any

from keep_sdk.connectors import ConnectorSet
from keep_sdk.connectors.builtin import FaultKind, Gmail, Sheets, Slack
from keep_sdk.plugins import KeepPlugins
from keep_sdk.runtime import Runtime
from keep_sdk.sandbox import InProcessIsolation
from keep_sdk.stores import open_store


class KillAfter:
    """A store proxy that kills the process right after `method` returns."""

    def __init__(self, store: Any, method: str) -> None:
        self._store = store
        self._method = method

    def __getattr__(self, name: str) -> Any:
        attribute = getattr(self._store, name)
        if name != self._method:
            return attribute

        def wrapped(*args: Any, **kwargs: Any) -> Any:
            result = attribute(*args, **kwargs)
            os.kill(os.getpid(), signal.SIGKILL)
            return result

        return wrapped


def main(store_url: str, backing: str, point: str) -> None:
    store: Any = open_store(store_url)
    sheets = Sheets(backing=backing)
    where, _, what = point.partition(":")
    if where == "after":
        store = KillAfter(store, what)
    else:
        sheets.faults.inject(FaultKind(what), operation="appendRow")
    runtime = Runtime(
        store,
        ConnectorSet([Gmail(backing=backing), sheets, Slack(backing=backing)]),
        load_workflow=KeepPlugins(load_entry_points=False).load_workflow,
        isolation=InProcessIsolation(),
    )
    runtime.run_consumer("mail-to-sheet", "appendRow")
    print("finished without being killed")


if __name__ == "__main__":
    main(*sys.argv[1:4])
