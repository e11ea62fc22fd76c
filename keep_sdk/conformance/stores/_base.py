"""The fixtures and helpers every store test mixin shares.

A store author subclasses `StoreConformance` (or single mixins), overrides the
`store` fixture and declares capabilities::

    class TestMyStore(StoreConformance):
        supports_fault_injection = True

        @pytest.fixture
        def store(self, clock):
            store = MyStore(clock=clock)
            yield store
            store.close()

Tests use fresh workflow names, so a store may be shared between tests.
"""

from __future__ import annotations

import json
import subprocess
import sys
import uuid
from collections.abc import Callable, Iterator, Sequence
from typing import Any, ClassVar

import pytest

from keep_sdk.conformance.stores._support import (
    CONSUMER,
    PRODUCER,
    STANDARD_HANDLERS,
    FaultInjector,
    InjectedFault,
    ManualClock,
    snapshot,
)
from keep_sdk.model import HandlerKind, PrepareResult, Reservation, RunPhase, RunRecord
from keep_sdk.stores import (
    HandlerSpec,
    Publication,
    Store,
    SupportsFaultInjection,
    open_store,
)

__all__ = ["StoreTestBase"]


class StoreTestBase:
    """Fixtures, capabilities and helpers of the store suite. Not collected by itself."""

    supports_threads: ClassVar[bool] = True
    """The store may be called from several threads at once (a thread-safe store)."""

    supports_processes: ClassVar[bool] = False
    """`store_url` opens the same data from another process (process races, SIGKILL)."""

    supports_reopen: ClassVar[bool] = False
    """`reopen` opens the same data again, as after a restart."""

    supports_fault_injection: ClassVar[bool] = False
    """The store calls ``fault_hook`` between the writes of each commit point."""

    supports_reading_snapshots: ClassVar[bool] = False
    """`Store.reading` answers from one snapshot: a commit made through another store opened
    by `reopen` is not visible inside the block (needs `supports_reopen`)."""

    backlog_size: ClassVar[int] = 100_000
    """Consumed events loaded into one topic for the bounded-peek test."""

    process_workers: ClassVar[int] = 3
    """Processes (and threads) racing in the concurrency tests."""

    # Fixtures a store author overrides

    @pytest.fixture
    def clock(self) -> ManualClock:
        """The time the store must use (pass it as the store's clock)."""
        return ManualClock()

    @pytest.fixture
    def store(self, clock: ManualClock) -> Iterator[Store]:
        """A store using `clock`. Override this fixture: yield a store, then close it."""
        raise NotImplementedError(
            "override the `store` fixture in your StoreConformance subclass: "
            "yield a store built with the `clock` fixture, then close it"
        )

    @pytest.fixture
    def store_url(self) -> str | None:
        """A URL `open_store` accepts in any process, naming the `store` fixture's data."""
        return None

    @pytest.fixture
    def reopen(self, store_url: str | None, clock: ManualClock) -> Iterator[Callable[[], Store]]:
        """Open the `store` fixture's data again (default: `open_store(store_url)`); the
        stores it opened are closed after the test."""
        if not self.supports_reopen:
            pytest.skip(f"{type(self).__name__} does not declare supports_reopen")
        if store_url is None:
            raise NotImplementedError("supports_reopen needs `store_url` or a `reopen` override")
        opened: list[Store] = []

        def again() -> Store:
            store = open_store(store_url, clock=clock)
            opened.append(store)
            return store

        yield again
        for store in opened:
            store.close()

    @pytest.fixture
    def faults(self, store: Store) -> Iterator[FaultInjector]:
        """A fault injector installed as the store's fault hook."""
        if not self.supports_fault_injection:
            pytest.skip(f"{type(self).__name__} does not declare supports_fault_injection")
        assert isinstance(store, SupportsFaultInjection), (
            "supports_fault_injection is declared but the store has no `fault_hook` attribute"
        )
        injector = FaultInjector()
        store.fault_hook = injector
        yield injector
        store.fault_hook = None

    # Helpers

    def deploy(self, store: Store, handlers: Sequence[HandlerSpec] = STANDARD_HANDLERS) -> str:
        """Deploy a workflow under a fresh name with the standard handlers; return the name."""
        name = f"wf-{uuid.uuid4().hex[:12]}"
        store.deploy(
            name, "export default Keep.workflow({})", {"topics": ["in"]}, handlers=handlers
        )
        return name

    def publish(
        self, store: Store, workflow: str, *message_ids: str, topic: str = "in", title: str = ""
    ) -> None:
        """Publish events with these messageIds (titles derived from them)."""
        for mid in message_ids:
            store.publish(workflow, Publication(topic=topic, message_id=mid, title=title or mid))

    def begin_consumer(self, store: Store, workflow: str, handler: str = CONSUMER) -> RunRecord:
        return store.begin_run(workflow, handler, HandlerKind.CONSUMER, input_state={"n": 1})

    def begin_producer(self, store: Store, workflow: str) -> RunRecord:
        return store.begin_run(workflow, PRODUCER, HandlerKind.PRODUCER)

    def prepared(
        self, store: Store, workflow: str, *message_ids: str, topic: str = "in"
    ) -> RunRecord:
        """A consumer run that reserved these events (published first if new)."""
        known = {e.message_id for e in store.events_by_ids(workflow, topic, message_ids)}
        self.publish(store, workflow, *(m for m in message_ids if m not in known), topic=topic)
        run = self.begin_consumer(store, workflow)
        reservations = [Reservation(topic=topic, ids=list(message_ids))] if message_ids else []
        return store.save_prepare_result(
            run.id, PrepareResult(reservations=reservations, data={"ids": list(message_ids)})
        )

    def mutating(self, store: Store, workflow: str, *message_ids: str) -> RunRecord:
        run = self.prepared(store, workflow, *message_ids)
        return store.advance_phase(run.id, RunPhase.MUTATING)

    def intent(self, store: Store, run: RunRecord) -> Any:
        return store.record_mutation_intent(
            run.id,
            connector="sheets",
            operation="appendRow",
            params={"values": ["a", 1]},
            idempotency_key=f"{run.workflow}:{run.handler}:{run.id}",
            ui_title="Add row for alice",
        )

    def assert_all_or_nothing(
        self,
        store: Store,
        faults: FaultInjector,
        workflows: Sequence[str],
        action: Callable[[], object],
        *,
        min_points: int = 1,
    ) -> None:
        """Fail `action` at each of its fault points in turn; each failure must change nothing.

        Finally runs `action` without a fault, so it must still succeed.
        """
        n = 1
        while True:
            before = snapshot(store, workflows)
            faults.arm(n)
            try:
                action()
            except InjectedFault as fault:
                failed_at: InjectedFault | None = fault
            else:
                failed_at = None
            finally:
                faults.disarm()
            if failed_at is None:
                break
            after = snapshot(store, workflows)
            assert after == before, f"{failed_at}: the store kept part of the commit point"
            n += 1
        assert n - 1 >= min_points, (
            f"the commit point called its fault hook {n - 1} times; expected at least "
            f"{min_points} (between its writes)"
        )

    def require_processes(self, store_url: str | None) -> str:
        """The store URL for child processes, or skip when the store has no such capability."""
        if not self.supports_processes:
            pytest.skip(f"{type(self).__name__} does not declare supports_processes")
        if store_url is None:
            raise NotImplementedError("supports_processes needs the `store_url` fixture")
        return store_url

    def spawn(self, store_url: str, action: str, *args: str) -> subprocess.Popen[str]:
        """Start a child process performing `action` on the store at `store_url`."""
        return subprocess.Popen(
            [sys.executable, "-m", "keep_sdk.conformance.stores._child", action, store_url, *args],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )

    def results(self, children: Sequence[subprocess.Popen[str]]) -> list[Any]:
        """The JSON line each child printed; a child that failed fails the test."""
        found = []
        for child in children:
            out, err = child.communicate(timeout=120)
            assert child.returncode == 0, f"child process failed:\n{err}"
            found.append(json.loads(out.strip().splitlines()[-1]))
        return found
