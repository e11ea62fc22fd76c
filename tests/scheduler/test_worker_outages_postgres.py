"""`keep worker` outlives its database: terminated backends, a server stopped for seconds,
a server that is not up yet. Real processes on a PostgreSQL server of the module's own
(stopping the session's would disturb other tests).

A worker logs exactly one line when an outage begins and one when the store answers
again, goes on to process what is published afterwards, and exits 0 on SIGTERM.
"""

from __future__ import annotations

import re
import signal
import subprocess
import sys
import time
import urllib.request
from collections import Counter
from collections.abc import Iterator
from contextlib import suppress
from pathlib import Path

import psycopg
import pytest
from prometheus_client.parser import text_string_to_metric_families

from keep_sdk.conformance import PostgresServer
from keep_sdk.conformance.postgres import PostgresUnavailable
from keep_sdk.connectors import ConnectorSet
from keep_sdk.connectors.builtin import Gmail, Sheets, Slack
from keep_sdk.model import EventStatus
from keep_sdk.plugins import KeepPlugins
from keep_sdk.runtime import Runtime
from keep_sdk.sandbox import InProcessIsolation
from keep_sdk.stores import Publication, Store, open_store
from tests.scheduler.workers import wait_for as _wait_for
from tests.scheduler.workers import worker as _worker

pytestmark = [pytest.mark.postgres]

OUTAGE = "store unavailable:"
RECOVERY = "store available again"

ONE_BY_ONE = """
export default Keep.workflow({
  name: "jobs",
  topics: { "job.queued": {} },
  consumers: {
    work: Keep.consumer({
      subscribe: ["job.queued"],
      async prepare(ctx, state) {
        const [job] = await ctx.peek("job.queued", { limit: 1 });
        if (!job) return { reservations: [], data: {} };
        return { reservations: [{ topic: "job.queued", ids: [job.messageId] }],
                 data: { id: job.messageId } };
      },
      async mutate(ctx, prepared) {
        await ctx.sheets.appendRow({ spreadsheetId: "jobs", values: [prepared.data.id] });
      },
      async next(ctx, prepared, mutationResult) {},
    }),
  },
});
"""


@pytest.fixture(scope="module")
def own_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[PostgresServer]:
    server = PostgresServer.start(tmp_path_factory.mktemp("outage-postgres"))
    yield server
    server.stop()


@pytest.fixture
def world(own_server: PostgresServer, tmp_path: Path) -> Iterator[tuple[str, Path, Store]]:
    url = own_server.create_database("outage")
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
    runtime.deploy(ONE_BY_ONE)
    store.grant_permission("jobs", "sheets.write", actor="test")
    runtime.close()
    try:
        yield url, doubles, store
    finally:
        with suppress(PostgresUnavailable):
            own_server.up()
        store.close()


def _publish(store: Store, message_ids: list[str]) -> None:
    """Publish, retrying while the server comes back (publishing is idempotent by id)."""
    for message_id in message_ids:
        _wait_for(
            lambda m=message_id: (
                store.publish("jobs", Publication(topic="job.queued", message_id=m, title=m)).event
                is not None
            ),
            60,
            f"publishing {message_id}",
        )


def _consumed(store: Store) -> int:
    return len(store.list_events("jobs", status=EventStatus.CONSUMED))


def _lines(log: Path, marker: str) -> int:
    return sum(1 for line in log.read_text().splitlines() if marker in line)


def _terminate_backends(admin_url: str, url: str) -> int:
    database = url.rpartition("/")[2]
    with psycopg.connect(admin_url, autocommit=True) as conn:
        rows = conn.execute(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
            "WHERE datname = %s AND pid <> pg_backend_pid()",
            (database,),
        ).fetchall()
    return len(rows)


def _metrics_url(log: Path) -> str:
    """Where the worker writing `log` serves /metrics (its ``metrics on URL`` line)."""
    found = re.search(r"^metrics on (\S+)$", log.read_text(), re.MULTILINE)
    assert found, log.read_text()
    return found[1]


def _outage_metrics(url: str) -> dict[str, float]:
    """The worker's outage metrics at `url`: outages begun, recovered, the outage state and
    store errors (the worker's own), by family name."""
    with urllib.request.urlopen(url, timeout=10) as response:
        text = response.read().decode()
    wanted = {
        "keep_store_outages": "keep_store_outages_total",
        "keep_store_recoveries": "keep_store_recoveries_total",
        "keep_store_outage": "keep_store_outage",
        "keep_store_errors": "keep_store_errors_total",
        "keep_store_last_recovery_timestamp_seconds": "keep_store_last_recovery_timestamp_seconds",
    }
    found: dict[str, float] = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            if sample.name == wanted.get(family.name) and sample.labels.get("source") in (
                None,
                "worker",
            ):
                found[family.name] = sample.value
    assert found.keys() == wanted.keys(), text
    return found


def _recorded(doubles: Path) -> Counter[str]:
    return Counter(
        job
        for effect in Sheets(backing=doubles).effects("appendRow")
        for job in effect["params"]["values"]
    )


def _stop(worker: subprocess.Popen[bytes], log: Path) -> None:
    alive = worker.poll() is None
    worker.send_signal(signal.SIGTERM)
    code = worker.wait(timeout=30)
    assert alive, f"the worker exited on its own:\n{log.read_text()}"
    assert code == 0, log.read_text()


def test_a_worker_lives_through_terminated_backends_and_a_stopped_server(
    own_server: PostgresServer, world: tuple[str, Path, Store], tmp_path: Path
) -> None:
    url, doubles, store = world
    log = tmp_path / "worker.log"
    worker = _worker(url, doubles, "w", log)
    try:
        _publish(store, ["a1", "a2"])
        _wait_for(lambda: _consumed(store) == 2, 90, "the first jobs")
        store.close()

        assert _terminate_backends(own_server.admin_url, url) >= 1
        _wait_for(lambda: _lines(log, RECOVERY) == 1, 60, "the recovery from terminated backends")
        _publish(store, ["b1", "b2"])
        _wait_for(lambda: _consumed(store) == 4, 60, "jobs published after the termination")
        store.close()

        own_server.down()
        time.sleep(3)
        own_server.up()
        _wait_for(lambda: _lines(log, RECOVERY) == 2, 60, "the recovery from the restart")
        _publish(store, ["c1", "c2"])
        _wait_for(lambda: _consumed(store) == 6, 60, "jobs published after the restart")
    finally:
        _stop(worker, log)
    output = log.read_text()
    assert _lines(log, OUTAGE) == 2, output
    assert _lines(log, RECOVERY) == 2, output
    assert "Traceback" not in output, output
    recorded = _recorded(doubles)
    assert sorted(recorded) == ["a1", "a2", "b1", "b2", "c1", "c2"]
    assert set(recorded.values()) == {1}


def test_a_worker_started_before_its_server_waits_for_it(
    own_server: PostgresServer, world: tuple[str, Path, Store], tmp_path: Path
) -> None:
    url, doubles, store = world
    store.close()
    log = tmp_path / "worker.log"
    own_server.down()
    worker = _worker(url, doubles, "early", log)
    try:
        _wait_for(lambda: _lines(log, OUTAGE) == 1, 60, "the worker to report the outage")
        assert worker.poll() is None, log.read_text()
        time.sleep(1)
        own_server.up()
        _wait_for(lambda: _lines(log, RECOVERY) == 1, 60, "the worker to find its store")
        _publish(store, ["x1", "x2", "x3"])
        _wait_for(lambda: _consumed(store) == 3, 60, "the jobs")
    finally:
        _stop(worker, log)
    output = log.read_text()
    assert _lines(log, OUTAGE) == 1, output
    assert _lines(log, RECOVERY) == 1, output
    assert "Traceback" not in output, output
    assert sorted(_recorded(doubles)) == ["x1", "x2", "x3"]


def test_a_worker_whose_database_does_not_exist_exits_1_with_one_message(
    own_server: PostgresServer, tmp_path: Path
) -> None:
    base = own_server.admin_url.rpartition("/")[0]
    done = subprocess.run(
        [sys.executable, "-m", "keep_sdk", "worker", "--store", f"{base}/no_such_database"],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 1, done.stdout + done.stderr
    assert 'database "no_such_database" does not exist' in done.stderr
    assert OUTAGE not in done.stderr
    assert "Traceback" not in done.stderr


@pytest.mark.slow
def test_two_workers_outlive_three_restarts_and_three_terminations_with_exact_counts(
    own_server: PostgresServer, world: tuple[str, Path, Store], tmp_path: Path
) -> None:
    url, doubles, store = world
    logs = [tmp_path / f"w{i}.log" for i in range(2)]
    workers = [
        _worker(url, doubles, f"w{i}", log, "--metrics-port", "0") for i, log in enumerate(logs)
    ]
    published: list[str] = []
    try:
        _wait_for(
            lambda: all(re.search(r"^worker ", log.read_text(), re.MULTILINE) for log in logs),
            60,
            "both workers to start",
        )
        assert not any(_lines(log, OUTAGE) for log in logs), "an outage before the restarts"
        for round_ in range(3):
            batch = [f"r{round_}-{i}" for i in range(8)]
            _publish(store, batch)
            published += batch
            done = len(published) - 4
            _wait_for(lambda n=done: _consumed(store) >= n, 60, "progress")
            store.close()
            _terminate_backends(own_server.admin_url, url)
            time.sleep(0.5)
            own_server.down()
            time.sleep(1)
            own_server.up()
        tail = [f"tail-{i}" for i in range(6)]
        _publish(store, tail)
        published += tail
        _wait_for(lambda: _consumed(store) == len(published), 90, "every job to be consumed")
        urls = [_metrics_url(log) for log in logs]
        _wait_for(
            lambda: all(_outage_metrics(u)["keep_store_outage"] == 0 for u in urls),
            60,
            "both workers to have recovered",
        )
        metrics = [_outage_metrics(u) for u in urls]
        seen = [_lines(log, OUTAGE) for log in logs]
    finally:
        for worker, log in zip(workers, logs, strict=True):
            _stop(worker, log)
    recorded = _recorded(doubles)
    assert sorted(recorded) == sorted(published), "a job was lost"
    assert set(recorded.values()) == {1}, f"a job was recorded twice: {recorded.most_common(3)}"
    assert len(store.list_events("jobs")) == len(published)
    assert store.active_runs() == []
    for log in logs:
        output = log.read_text()
        assert _lines(log, OUTAGE) >= 1, output
        outages, recoveries = _lines(log, OUTAGE), _lines(log, RECOVERY)
        assert recoveries in (outages, outages - 1), output  # the last may outlast the stop
        assert "Traceback" not in output, output
    for measured, lines in zip(metrics, seen, strict=True):
        assert measured["keep_store_outages"] == lines >= 1, (measured, lines)
        assert measured["keep_store_recoveries"] == measured["keep_store_outages"], measured
        assert measured["keep_store_errors"] >= measured["keep_store_outages"], measured
        assert measured["keep_store_last_recovery_timestamp_seconds"] > 0, measured
