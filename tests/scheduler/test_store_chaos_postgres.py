"""Two `keep worker` processes on a PostgreSQL server that is restarted under load.

A server of the test's own (restarting the session's would disturb other tests),
three restarts (``-m fast`` and ``-m immediate``) while 300 events are published
and consumed. Database errors are transient: the workers live through every
restart, and at the end every event is consumed, every effect happened exactly
once, and no run is left unfinished.
"""

from __future__ import annotations

import signal
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest

from keep_sdk.conformance import PostgresServer
from keep_sdk.connectors import ConnectorSet
from keep_sdk.connectors.builtin import Gmail, Sheets, Slack
from keep_sdk.errors import StoreUnavailable
from keep_sdk.model import EventStatus, RunStatus
from keep_sdk.plugins import KeepPlugins
from keep_sdk.runtime import Runtime
from keep_sdk.sandbox import InProcessIsolation
from keep_sdk.stores import Publication, Store, open_store
from tests.scheduler.workers import wait_for as _wait_for
from tests.scheduler.workers import worker as _worker

pytestmark = [pytest.mark.postgres, pytest.mark.slow]

BATCH = """
export default Keep.workflow({
  name: "NAME",
  topics: { "job.queued": {} },
  consumers: {
    work: Keep.consumer({
      subscribe: ["job.queued"],
      async prepare(ctx, state) {
        const jobs = await ctx.peek("job.queued", { limit: 5 });
        if (!jobs.length) return { reservations: [], data: {} };
        const ids = jobs.map((j) => j.messageId);
        return { reservations: [{ topic: "job.queued", ids }], data: { ids } };
      },
      async mutate(ctx, prepared) {
        await ctx.sheets.appendRow({ spreadsheetId: "jobs", values: prepared.data.ids });
      },
      async next(ctx, prepared, mutationResult) {},
    }),
  },
});
"""

WORKFLOWS = ("alpha", "beta", "gamma")
EVENTS = 300
RESTARTS = ("fast", "immediate", "fast")


@pytest.fixture(scope="module")
def own_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[PostgresServer]:
    server = PostgresServer.start(tmp_path_factory.mktemp("chaos-postgres"))
    yield server
    server.stop()


def _ids() -> list[tuple[str, str]]:
    return [(WORKFLOWS[i % len(WORKFLOWS)], f"job-{i:03d}") for i in range(EVENTS)]


def _publish(store: Store, workflow: str, message_id: str) -> None:
    """Publish, retrying while the server restarts (publish is idempotent by message id)."""
    deadline = time.monotonic() + 60
    while True:
        try:
            store.publish(
                workflow, Publication(topic="job.queued", message_id=message_id, title=message_id)
            )
            return
        except StoreUnavailable:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.1)


def _started(log: Path) -> bool:
    """Whether the worker writing `log` opened the store (its first line names it): a
    restart before that tests a worker that never ran, not one living through it."""
    return log.read_bytes().startswith(b"worker ")


def _consumed(store: Store) -> int:
    return sum(
        1 for name in WORKFLOWS for e in store.list_events(name, status=EventStatus.CONSUMED)
    )


def test_three_postgres_restarts_under_two_workers_lose_and_repeat_nothing(
    own_server: PostgresServer, tmp_path: Path
) -> None:
    url = own_server.create_database("chaos")
    doubles = tmp_path / "doubles.db"
    store = open_store(url)
    runtime = Runtime(
        store,
        ConnectorSet(
            [
                Gmail(backing=doubles),
                Sheets(backing=doubles, seed={"spreadsheets": {"jobs": {"rows": []}}}),
                Slack(backing=doubles),
            ]
        ),
        load_workflow=KeepPlugins(load_entry_points=False).load_workflow,
        isolation=InProcessIsolation(),
    )
    for name in WORKFLOWS:
        runtime.deploy(BATCH.replace("NAME", name))
        store.grant_permission(name, "sheets.write", actor="test")
    runtime.close()
    ids = _ids()
    first, rest = ids[: EVENTS // 2], ids[EVENTS // 2 :]
    for workflow, message_id in first:
        _publish(store, workflow, message_id)
    logs = [tmp_path / f"w{i}.log" for i in range(2)]
    workers = [_worker(url, doubles, f"w{i}", log) for i, log in enumerate(logs)]
    try:
        _wait_for(lambda: all(_started(log) for log in logs), 60, "both workers to start")
        chunk = len(rest) // len(RESTARTS)
        for number, mode in enumerate(RESTARTS):
            _wait_for(lambda n=number: _consumed(store) > 20 * (n + 1), 60, "progress")
            own_server.restart(mode)
            for workflow, message_id in rest[number * chunk : (number + 1) * chunk]:
                _publish(store, workflow, message_id)
        for workflow, message_id in rest[len(RESTARTS) * chunk :]:
            _publish(store, workflow, message_id)
        _wait_for(lambda: _consumed(store) == EVENTS, 180, "every event to be consumed")
        alive = [w.poll() is None for w in workers]
    finally:
        for worker in workers:
            worker.send_signal(signal.SIGTERM)
        codes = [worker.wait(timeout=30) for worker in workers]
    output = "\n---\n".join(log.read_text() for log in logs)
    assert alive == [True, True], f"a worker exited during the restarts:\n{output}"
    assert codes == [0, 0], output

    events = [e for name in WORKFLOWS for e in store.list_events(name)]
    assert len(events) == EVENTS
    assert {e.status for e in events} == {EventStatus.CONSUMED}
    recorded = Counter(
        job
        for effect in Sheets(backing=doubles).effects("appendRow")
        for job in effect["params"]["values"]
    )
    assert set(recorded) == {message_id for _, message_id in ids}, "an event was lost"
    assert set(recorded.values()) == {1}, f"duplicate rows: {recorded.most_common(3)}"
    assert store.active_runs() == []
    runs = store.list_runs()
    statuses = Counter(r.status for r in runs)
    assert set(statuses) <= {RunStatus.COMMITTED, RunStatus.CRASHED}, statuses
    assert "store unavailable:" in output or any(r.transient_failures for r in runs), (
        "the restarts never reached the workers"
    )
    store.close()
