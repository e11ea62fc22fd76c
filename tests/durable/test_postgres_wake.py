"""On PostgreSQL a notification wakes an idle worker at once (LISTEN/NOTIFY)."""

from __future__ import annotations

import threading
import time
import uuid

from keep_sdk.conformance.postgres import PostgresServer
from keep_sdk.model import RunStatus
from keep_sdk.scheduler import Scheduler
from keep_sdk.stores import SqlStore
from tests.durable.harness import make_env

POLL_S = 120.0


def test_a_notification_wakes_a_sleeping_worker(postgres_server: PostgresServer) -> None:
    url = postgres_server.create_database(f"wake_{uuid.uuid4().hex[:12]}")
    env = make_env(url)
    env.need("m1")
    run_id = env.run()
    invocation = env.durable.invocation_for_run(run_id)
    assert invocation is not None
    key = invocation.correlation_key
    worker_env = make_env(url, deploy=False)
    assert isinstance(worker_env.store, SqlStore)
    worker = Scheduler(worker_env.runtime, worker="sleeper")
    stop = threading.Event()
    idle = threading.Event()
    started = [0.0]

    def notify_once() -> None:
        """The notification is committed once the worker found nothing to do and before it
        sleeps: the moment a worker that listened only when it began to sleep missed it."""
        if not idle.is_set():
            started[0] = time.monotonic()
            env.durable.receive_notification(key, {"file": "p.pdf"}, source="test")
            idle.set()

    thread = threading.Thread(
        target=worker.run_forever, kwargs={"stop": stop, "poll_s": POLL_S, "on_idle": notify_once}
    )
    thread.start()
    try:
        assert idle.wait(60)
        while env.store.get_run(run_id).status is not RunStatus.COMMITTED:
            assert time.monotonic() - started[0] < POLL_S / 2, "the worker was not woken"
            time.sleep(0.05)
    finally:
        stop.set()
        thread.join(30)
        worker_env.store.close()
        env.store.close()
    assert not thread.is_alive()
