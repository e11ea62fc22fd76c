"""A planning step costs the same whatever the history and the number of workflows.

The scheduler asks "what is due now?" every step. Its statements are counted
with SQLAlchemy's cursor events on a real SQLite file, and every one of them is
checked with ``EXPLAIN QUERY PLAN``: none may read a whole table of history
(runs, ledger entries, events).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa

from keep_sdk.connectors import ConnectorSet
from keep_sdk.connectors.builtin import Gmail, Sheets, Slack
from keep_sdk.model import RunStatus
from keep_sdk.plugins import KeepPlugins
from keep_sdk.runtime import Runtime
from keep_sdk.sandbox import InProcessIsolation
from keep_sdk.scheduler import Scheduler
from keep_sdk.stores import Publication, SqlStore

SCRIPT = """
export default Keep.workflow({
  name: "NAME",
  topics: { "job.queued": {} },
  consumers: {
    record: Keep.consumer({
      subscribe: ["job.queued"],
      async prepare(ctx, state) {
        const [job] = await ctx.peek("job.queued", { limit: 1 });
        if (!job) return { reservations: [], data: {} };
        return { reservations: [{ topic: "job.queued", ids: [job.messageId] }],
                 data: { id: job.messageId }, ui: { title: `Record ${job.messageId}` } };
      },
      async mutate(ctx, prepared) {
        await ctx.sheets.appendRow({ spreadsheetId: "jobs", values: [prepared.data.id] });
      },
      async next(ctx, prepared, result) { return { last: prepared.data.id }; },
    }),
  },
  producers: {
    tick: { schedule: { interval: "1h" }, handler: async (ctx, state) => ({ n: 1 }) },
  },
});
"""

HISTORY_TABLES = ("keep_runs", "keep_ledger", "keep_events")


@dataclass
class Statements:
    """Statements a planning step ran, with their parameters."""

    seen: list[tuple[str, Any]] = field(default_factory=list)

    def __call__(self, conn: Any, cursor: Any, statement: str, params: Any, *rest: Any) -> None:
        if statement.split()[0].upper() == "SELECT":
            self.seen.append((statement, params))


def installation(path: Path, workflows: int) -> tuple[SqlStore, Scheduler]:
    store = SqlStore(f"sqlite:///{path}")
    runtime = Runtime(
        store,
        ConnectorSet([Gmail(), Sheets(seed={"spreadsheets": {"jobs": {"rows": []}}}), Slack()]),
        load_workflow=KeepPlugins(load_entry_points=False).load_workflow,
        isolation=InProcessIsolation(),
    )
    for i in range(workflows):
        runtime.deploy(SCRIPT.replace("NAME", f"w{i}"))
        store.grant_permission(f"w{i}", "sheets.write", actor="test")
    for i in range(3):
        store.publish(
            "w0", Publication(topic="job.queued", message_id=f"j{i}", title="job", payload={})
        )
    scheduler = Scheduler(runtime)
    scheduler.run_until_idle()
    return store, scheduler


def add_history(store: SqlStore, runs: int) -> None:
    """Copy the newest committed run and its ledger entry `runs` times (weeks of work),
    and a failed run that a later run superseded for every tenth of them."""
    with store.engine.begin() as conn:
        template = dict(
            conn.execute(
                sa.text("SELECT * FROM keep_runs WHERE status = 'committed' ORDER BY seq DESC")
            )
            .mappings()
            .first()
            or {}
        )
        entry = dict(conn.execute(sa.text("SELECT * FROM keep_ledger")).mappings().first() or {})
        assert template, "the installation committed no run"
        assert entry, "the installation recorded no mutation"
        copies, entries = [], []
        for i in range(runs):
            failed = i % 10 == 0
            run = {**template, "id": f"run_history_{i}"}
            run.pop("seq")
            if failed:
                run.update(status=RunStatus.FAILED_LOGIC.value, failure="logic", error="boom")
            copies.append(run)
            entries.append({**entry, "id": f"mut_history_{i}", "run_id": run["id"]})
            entries[-1].pop("seq")
        for table, rows in (("keep_runs", copies), ("keep_ledger", entries)):
            columns = list(rows[0])
            conn.execute(
                sa.text(
                    f"INSERT INTO {table} ({', '.join(columns)}) "
                    f"VALUES ({', '.join(':' + c for c in columns)})"
                ),
                rows,
            )
        latest = {**template, "id": "run_history_latest"}
        latest.pop("seq")
        conn.execute(
            sa.text(
                f"INSERT INTO keep_runs ({', '.join(latest)}) "
                f"VALUES ({', '.join(':' + c for c in latest)})"
            ),
            latest,
        )


def planning_step(store: SqlStore, scheduler: Scheduler) -> Statements:
    statements = Statements()
    sa.event.listen(store.engine, "before_cursor_execute", statements)
    try:
        assert scheduler.due() == []
        scheduler.next_due()
    finally:
        sa.event.remove(store.engine, "before_cursor_execute", statements)
    return statements


@pytest.fixture
def measure(tmp_path: Path) -> Iterator[Any]:
    opened: list[SqlStore] = []

    def run(name: str, workflows: int, history: int) -> tuple[SqlStore, Statements]:
        store, scheduler = installation(tmp_path / f"{name}.db", workflows)
        opened.append(store)
        if history:
            add_history(store, history)
        planning_step(store, scheduler)
        return store, planning_step(store, scheduler)

    yield run
    for store in opened:
        store.close()


def test_statements_per_planning_step_do_not_grow_with_workflows_or_history(
    measure: Any,
) -> None:
    _, one = measure("one", workflows=1, history=0)
    _, many = measure("many", workflows=100, history=0)
    _, old = measure("old", workflows=1, history=5_000)
    assert len(one.seen) == len(many.seen) == len(old.seen), (
        f"1 workflow: {len(one.seen)} statements, 100 workflows: {len(many.seen)}, "
        f"5,000 runs of history: {len(old.seen)}"
    )
    assert len(one.seen) <= 16


def test_no_planning_statement_reads_a_whole_table_of_history(measure: Any) -> None:
    store, step = measure("plans", workflows=3, history=2_000)
    with store.engine.connect() as conn:
        raw = conn.connection.driver_connection
        assert raw is not None
        for statement, params in step.seen:
            plan = raw.execute(f"EXPLAIN QUERY PLAN {statement}", params).fetchall()
            details = [str(row[-1]) for row in plan]
            scans = [d for d in details if d.startswith("SCAN ") and _table(d) in HISTORY_TABLES]
            assert not scans, f"{statement}\nreads history: {scans}"


def _table(detail: str) -> str:
    return detail.split()[1]
