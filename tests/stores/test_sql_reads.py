"""Reads of the SQLite store never wait for a writer: `keep status`, the console and a
planning worker read while another process holds the write lock mid-commit."""

from __future__ import annotations

import datetime as dt
import inspect
import sqlite3
from collections.abc import Callable, Iterator
from contextlib import suppress
from pathlib import Path
from typing import Any

import pytest

from keep_sdk.errors import NotFound, StoreUnavailable
from keep_sdk.stores import SqlStore

MOMENT = dt.datetime(2026, 1, 1, tzinfo=dt.UTC)

READS: dict[str, Callable[[SqlStore], Any]] = {
    "active_runs": lambda s: s.active_runs(),
    "audit_log": lambda s: s.audit_log(),
    "consumers_to_wake": lambda s: s.consumers_to_wake(MOMENT),
    "count_by_status": lambda s: s.count_by_status("wf"),
    "count_rows": lambda s: s.count_rows(),
    "deliverable_notifications": lambda s: s.deliverable_notifications(),
    "due_polls": lambda s: s.due_polls(MOMENT),
    "due_producers": lambda s: s.due_producers(MOMENT),
    "due_reconciliations": lambda s: s.due_reconciliations(MOMENT),
    "events_by_ids": lambda s: s.events_by_ids("wf", "t", ["m"]),
    "events_published_by": lambda s: s.events_published_by("wf", ["r"]),
    "expired_invocations": lambda s: s.expired_invocations(MOMENT),
    "explain_pending": lambda s: s.explain_pending("wf", "t", limit=5),
    "get_event": lambda s: s.get_event("e"),
    "get_handler": lambda s: s.get_handler("wf", "h"),
    "get_invocation": lambda s: s.get_invocation("i"),
    "get_lease": lambda s: s.get_lease("l"),
    "get_ledger_entry": lambda s: s.get_ledger_entry("x"),
    "get_run": lambda s: s.get_run("r"),
    "get_workflow": lambda s: s.get_workflow("wf"),
    "get_workflow_version": lambda s: s.get_workflow_version("wf", 1),
    "invocation_by_key": lambda s: s.invocation_by_key("k"),
    "invocation_for_run": lambda s: s.invocation_for_run("r"),
    "ledger_entry_for_run": lambda s: s.ledger_entry_for_run("r"),
    "ledger_for_runs": lambda s: s.ledger_for_runs(["r"]),
    "list_attempts": lambda s: s.list_attempts("i"),
    "list_events": lambda s: s.list_events(workflow="wf"),
    "list_handlers": lambda s: s.list_handlers("wf"),
    "list_invocations": lambda s: s.list_invocations(),
    "list_leases": lambda s: s.list_leases(),
    "list_ledger": lambda s: s.list_ledger(workflow="wf"),
    "list_notifications": lambda s: s.list_notifications("i"),
    "list_runs": lambda s: s.list_runs(workflow="wf"),
    "list_workflows": lambda s: s.list_workflows(),
    "page_events": lambda s: s.page_events("wf", limit=5),
    "page_ledger": lambda s: s.page_ledger(workflow="wf", limit=5),
    "page_runs": lambda s: s.page_runs(workflow="wf", limit=5),
    "peek_cost": lambda s: s.peek_cost("wf", "t", limit=5),
    "pending_events": lambda s: s.pending_events("wf", "t", limit=5),
    "runs_by_ids": lambda s: s.runs_by_ids(["r"]),
}
"""Every read of `SqlStore`, with arguments that name nothing stored (what is read does not
matter here, only how)."""

OPEN_A_READ_BUT_ARE_NOT_READS = {"begin_consumer_run", "reading"}
"""Methods that open a read transaction yet are not reads of the table: a write that reads
first (`begin_consumer_run`) and the block that other reads share (`reading`)."""


def _opens_a_read_transaction(method: Any) -> bool:
    source = inspect.getsource(method)
    return "self._read()" in source or "write=False" in source


def test_the_table_names_every_read_the_store_has() -> None:
    found = {
        name
        for name, method in inspect.getmembers(SqlStore, inspect.isfunction)
        if not name.startswith("_") and _opens_a_read_transaction(method)
    }
    assert found - OPEN_A_READ_BUT_ARE_NOT_READS <= set(READS)


@pytest.fixture
def locked(tmp_path: Path) -> Iterator[SqlStore]:
    """A store whose file another program holds in a write transaction (``BEGIN IMMEDIATE``,
    as a committing worker does), with a busy timeout far below the test's patience."""
    path = tmp_path / "keep.db"
    store = SqlStore(f"sqlite:///{path}?busy_timeout=200")
    store.deploy("wf", "source", {}, handlers=[])
    holder = sqlite3.connect(path, isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")
    holder.execute("UPDATE keep_workflows SET paused = paused")
    try:
        yield store
    finally:
        holder.execute("ROLLBACK")
        holder.close()
        store.close()


@pytest.mark.parametrize("name", sorted(READS))
def test_a_read_does_not_wait_for_another_programs_write_lock(locked: SqlStore, name: str) -> None:
    with suppress(NotFound):
        READS[name](locked)


def test_a_write_does_wait_for_it(locked: SqlStore) -> None:
    """The fixture's lock is real: a write behind it times out."""
    with pytest.raises(StoreUnavailable, match="database is locked"):
        locked.pause_workflow("wf", actor="tester")
