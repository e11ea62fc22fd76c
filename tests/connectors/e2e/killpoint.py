"""A keep plugin for crash tests: the ``killsqlite:///PATH`` store, a SQLite store that
SIGKILLs its own process at a chosen commit point.

Registered through an entry point (``killpoint = tests.connectors.e2e.killpoint``) so a
real ``keep run`` / ``keep worker`` process loads it like any third-party store plugin.
``KEEP_TEST_KILL_AT`` is ``after:<store method>`` (killed right after the method
returns: its commit is durable) or ``before:<store method>`` (killed instead of
calling it). ``KEEP_TEST_KILL_LOG`` names a file of ``point handler`` lines, one per
kill already done. A process is killed at the first call for a handler not yet in the
file (the line is written and fsynced first), so over successive restarts every run's
checkpoint is killed exactly once and each restart makes progress.
"""

from __future__ import annotations

import os
import signal
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import keep_sdk
from keep_sdk.stores import Store, open_store

KILL_AT = "KEEP_TEST_KILL_AT"
KILL_LOG = "KEEP_TEST_KILL_LOG"


def _handler(store: Store, first: Any) -> str:
    """The handler of the run a store call is about: its first argument is a run id or,
    for the ledger's calls, a ledger entry id."""
    if any(r.id == first for r in store.list_runs()):
        return store.get_run(first).handler
    return store.get_ledger_entry(first).handler


def _kill_once(log: Path, line: str) -> None:
    done = log.read_text().splitlines() if log.exists() else []
    if line in done:
        return
    with log.open("a") as out:
        out.write(line + "\n")
        out.flush()
        os.fsync(out.fileno())
    os.kill(os.getpid(), signal.SIGKILL)


def _killing(store: Store, point: str, log: Path) -> Callable[..., Any]:
    when, _, method = point.partition(":")
    original = getattr(store, method)

    def wrapped(*args: Any, **kwargs: Any) -> Any:
        if when == "before":
            _kill_once(log, f"{point} {_handler(store, args[0])}")
        result = original(*args, **kwargs)
        if when == "after":
            run = getattr(result, "run", result)
            handler = run.handler if hasattr(run, "handler") else _handler(store, args[0])
            _kill_once(log, f"{point} {handler}")
        return result

    return wrapped


def open_killing_store(url: str, **options: Any) -> Store:
    """The SQLite store at the path of `url`, killing at ``$KEEP_TEST_KILL_AT``."""
    store = open_store("sqlite:" + url.partition(":")[2], **options)
    point = os.environ.get(KILL_AT)
    if point:
        setattr(store, point.partition(":")[2], _killing(store, point, Path(os.environ[KILL_LOG])))
    return store


@keep_sdk.hookimpl
def register_stores() -> Mapping[str, Callable[..., Any]]:
    return {"killsqlite": open_killing_store}
