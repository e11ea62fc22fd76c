"""Durable round trips per run: counted on a real SQLite store, so a regression fails.

A consumer run that peeks one event, makes one ledgered mutation and publishes
one event in `next` takes exactly the checkpoints docs/execution.md names: two
when the operation reconciles (begin + prepare result + intent; applied +
commit), three when it cannot (the applied record on its own), at most 15
statements, and at most four read-only transactions, planning included. A
producer run takes two writing transactions (begin, commit). The workflow's
lease is held already, as in a worker's steady state. The drain's time budget
cannot run out in these tests, so a loaded machine does not change what a
scheduler step does.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

import pytest
import sqlalchemy as sa

from keep_sdk.connectors import ConnectorSet
from keep_sdk.connectors.builtin import Gmail, Sheets, Slack
from keep_sdk.model import HandlerKind, LedgerStatus, RunStatus
from keep_sdk.plugins import KeepPlugins
from keep_sdk.runtime import Runtime
from keep_sdk.sandbox import InProcessIsolation
from keep_sdk.scheduler import Scheduler
from keep_sdk.stores import Publication, SqlStore

T = TypeVar("T")

SCRIPT = """
export default Keep.workflow({
  name: "jobs",
  topics: { "job.queued": {}, "job.recorded": {} },
  consumers: {
    record: Keep.consumer({
      subscribe: ["job.queued"],
      publishes: ["job.recorded"],
      async prepare(ctx, state) {
        const [job] = await ctx.peek("job.queued", { limit: 1 });
        if (!job) return { reservations: [], data: {} };
        return { reservations: [{ topic: "job.queued", ids: [job.messageId] }],
                 data: { id: job.messageId }, ui: { title: `Record ${job.messageId}` } };
      },
      async mutate(ctx, prepared) {
        await ctx.sheets.appendRow({ spreadsheetId: "jobs", values: [prepared.data.id] });
      },
      async next(ctx, prepared, result) {
        await ctx.publish("job.recorded", { messageId: prepared.data.id, title: "Recorded",
                                            payload: {} });
        return { last: prepared.data.id };
      },
    }),
  },
  producers: {
    tick: { schedule: { interval: "1h" }, handler: async (ctx, state) => ({ n: 1 }) },
  },
});
"""

SLACK_SCRIPT = SCRIPT.replace(
    'ctx.sheets.appendRow({ spreadsheetId: "jobs", values: [prepared.data.id] })',
    'ctx.slack.postMessage({ channel: "#jobs", text: `Recorded ${prepared.data.id}` })',
)
MAX_STATEMENTS = 15
"""Statements (reads included, BEGIN and COMMIT not) a consumer run with one reconciling
mutation sends to the store (issue 32's floor): four planning reads, five in the begin
(workflow, handler, run insert, one reserving update, ledger insert) and six in the applied
commit (entry and run in one read, one update each for the entry, the reserved events,
the state, the run, and the event insert)."""
MAX_STATEMENTS_UNRECONCILABLE = 18
"""The same with an operation that cannot reconcile (its applied record stands alone, and
the commit reads the run and its entry again)."""


@dataclass
class Transactions:
    """Transactions begun on the engine, by kind (SQLite: BEGIN IMMEDIATE writes)."""

    writing: int = 0
    reading: int = 0
    statements: list[str] = field(default_factory=list)

    def __call__(self, conn: Any, cursor: Any, statement: str, *rest: Any) -> None:
        self.statements.append(statement)
        if statement == "BEGIN IMMEDIATE":
            self.writing += 1
        elif statement == "BEGIN":
            self.reading += 1


@pytest.fixture
def installation(tmp_path: Path) -> Iterator[tuple[SqlStore, Scheduler]]:
    store, runtime = _deployed(tmp_path, SCRIPT, "sheets.write")
    scheduler = Scheduler(runtime, drain_s=DRAIN_S)
    assert scheduler.step() is not None
    assert scheduler.step() is not None
    yield store, scheduler
    store.close()


DRAIN_S = 24 * 3600.0
"""A drain budget no test outlasts: the counted steps are drained runs, however slow."""


def _deployed(tmp_path: Path, script: str, permission: str) -> tuple[SqlStore, Runtime]:
    store = SqlStore(f"sqlite:///{tmp_path / 'keep.db'}")
    runtime = Runtime(
        store,
        ConnectorSet(
            [
                Gmail(),
                Sheets(seed={"spreadsheets": {"jobs": {"rows": []}}}),
                Slack(seed={"channels": {"#jobs": []}}),
            ]
        ),
        load_workflow=KeepPlugins(load_entry_points=False).load_workflow,
        isolation=InProcessIsolation(),
    )
    runtime.deploy(script)
    store.grant_permission("jobs", permission, actor="test")
    for i in range(6):
        store.publish("jobs", Publication(topic="job.queued", message_id=f"j{i}", title="Job"))
    return store, runtime


def counted(store: SqlStore, call: Callable[[], T]) -> tuple[Transactions, T]:
    counter = Transactions()
    sa.event.listen(store.engine, "before_cursor_execute", counter)
    try:
        done = call()
    finally:
        sa.event.remove(store.engine, "before_cursor_execute", counter)
    return counter, done


def counted_step(store: SqlStore, scheduler: Scheduler) -> tuple[Transactions, Any]:
    return counted(store, scheduler.step)


def test_a_consumer_run_whose_mutation_reconciles_takes_two_checkpoints_and_four_reads(
    installation: tuple[SqlStore, Scheduler],
) -> None:
    store, scheduler = installation
    for _ in range(3):
        counter, activity = counted_step(store, scheduler)
        assert activity.run is not None
        assert activity.run.kind is HandlerKind.CONSUMER
        assert activity.run.status is RunStatus.COMMITTED
        entry = store.ledger_entry_for_run(activity.run.id)
        assert entry is not None
        assert entry.status is LedgerStatus.APPLIED
        assert counter.writing == 2, counter.statements
        assert counter.reading <= 4, counter.statements
        run_statements = [s for s in counter.statements if not s.startswith(("BEGIN", "COMMIT"))]
        assert len(run_statements) <= MAX_STATEMENTS, counter.statements


def test_a_consumer_run_whose_mutation_cannot_reconcile_takes_three_checkpoints(
    tmp_path: Path,
) -> None:
    store, runtime = _deployed(tmp_path, SLACK_SCRIPT, "slack.write")
    try:
        for _ in range(3):
            counter, run = counted(store, lambda: runtime.run_consumer("jobs", "record"))
            assert run.status is RunStatus.COMMITTED
            entry = store.ledger_entry_for_run(run.id)
            assert entry is not None
            assert entry.status is LedgerStatus.APPLIED
            assert counter.writing == 3, counter.statements
            assert counter.reading <= 3, counter.statements
            run_statements = [
                s for s in counter.statements if not s.startswith(("BEGIN", "COMMIT"))
            ]
            assert len(run_statements) <= MAX_STATEMENTS_UNRECONCILABLE, counter.statements
    finally:
        store.close()


def test_a_producer_run_takes_two_checkpoints(tmp_path: Path) -> None:
    store = SqlStore(f"sqlite:///{tmp_path / 'keep.db'}")
    try:
        runtime = Runtime(
            store,
            ConnectorSet([Gmail(), Sheets(), Slack()]),
            load_workflow=KeepPlugins(load_entry_points=False).load_workflow,
            isolation=InProcessIsolation(),
        )
        runtime.deploy(SCRIPT)
        scheduler = Scheduler(runtime)
        assert scheduler.leases.claim("jobs") is not None
        counter, activity = counted_step(store, scheduler)
        assert activity.run is not None
        assert activity.run.kind is HandlerKind.PRODUCER
        assert activity.run.status is RunStatus.COMMITTED
        assert counter.writing == 2, counter.statements
        assert counter.reading <= 3, counter.statements
    finally:
        store.close()
