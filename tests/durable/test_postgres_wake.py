"""On PostgreSQL a notification wakes an idle worker at once (LISTEN/NOTIFY), including one
committed between the worker's last look at the store and its first sleep."""

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


def _woken_within_half_a_poll(
    postgres_server: PostgresServer, *, at_idle: int, delay_s: float
) -> None:
    """A run parked on a durable operation and a worker polling every `POLL_S` seconds; the
    notification is committed `delay_s` after the worker's `at_idle`-th idle (from its
    `on_idle` itself when 0, before it sleeps). The run must commit within half a poll."""
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
    notified = threading.Event()
    idles = [0]
    started = [0.0]

    def notify() -> None:
        started[0] = time.monotonic()
        env.durable.receive_notification(key, {"file": "p.pdf"}, source="test")
        notified.set()

    def on_idle() -> None:
        idles[0] += 1
        if idles[0] != at_idle:
            return
        if delay_s:
            threading.Timer(delay_s, notify).start()
        else:
            notify()

    thread = threading.Thread(
        target=worker.run_forever, kwargs={"stop": stop, "poll_s": POLL_S, "on_idle": on_idle}
    )
    thread.start()
    try:
        assert notified.wait(60)
        while env.store.get_run(run_id).status is not RunStatus.COMMITTED:
            assert time.monotonic() - started[0] < POLL_S / 2, "the worker was not woken"
            time.sleep(0.05)
    finally:
        stop.set()
        thread.join(30)
        worker_env.store.close()
        env.store.close()
    assert not thread.is_alive()


def test_a_notification_wakes_a_sleeping_worker(postgres_server: PostgresServer) -> None:
    """Half a second after the first idle, while the worker sleeps on its LISTEN."""
    _woken_within_half_a_poll(postgres_server, at_idle=1, delay_s=0.5)


def test_a_notification_before_the_first_sleep_is_not_missed(
    postgres_server: PostgresServer,
) -> None:
    """Committed after the worker's first look found nothing and before it listens: the
    moment a worker that began to listen only when it began to sleep missed it."""
    _woken_within_half_a_poll(postgres_server, at_idle=1, delay_s=0.0)
