"""The fixtures and helpers every store test mixin shares.

A store author subclasses `StoreConformance` (or single mixins), overrides the
`store` fixture and declares capabilities (each `StoreCapability` has a
``supports_*`` flag; `CAPABILITY_FLAGS` names them)::

    class TestMyStore(StoreConformance):
        supports_fault_injection = True

        @pytest.fixture
        def store(self, clock):
            store = MyStore(clock=clock)
            yield store
            store.close()

Tests use fresh workflow names, so a store may be shared between tests. A test that
needs a capability calls `StoreTestBase.require`, which records the capability on the
test (``keep_capability`` in its user properties, what the certificate counts) and
skips the test when the class does not declare it.
"""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import uuid
from collections.abc import Callable, Iterator, Sequence
from typing import Any, ClassVar, TypeVar

import pytest

from keep_sdk.conformance.pytest_plugin import (
    CAPABILITY_PROPERTY,
    DECLARES_PROPERTY,
    SUITE_PROPERTY,
)
from keep_sdk.conformance.stores._support import (
    CONSUMER,
    PRODUCER,
    STANDARD_HANDLERS,
    FaultInjector,
    InjectedFault,
    ManualClock,
    open_url,
    snapshot,
)
from keep_sdk.model import HandlerKind, PrepareResult, Reservation, RunPhase, RunRecord
from keep_sdk.stores import (
    HandlerSpec,
    Publication,
    Store,
    StoreCapability,
    SupportsCounts,
    SupportsFaultInjection,
    SupportsPages,
)

__all__ = ["CAPABILITY_FLAGS", "StoreTestBase"]

CAPABILITY_FLAGS: dict[StoreCapability, str] = {
    StoreCapability.DURABLE: "supports_durable",
    StoreCapability.PAGES: "supports_pages",
    StoreCapability.COUNTS: "supports_counts",
    StoreCapability.READING_SNAPSHOTS: "supports_reading_snapshots",
    StoreCapability.PROCESSES: "supports_processes",
    StoreCapability.REOPEN: "supports_reopen",
    StoreCapability.FAULT_INJECTION: "supports_fault_injection",
}
"""The class attribute that declares each capability in a `StoreConformance` subclass."""


_T = TypeVar("_T")


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

    supports_durable: ClassVar[bool] = False
    """The store keeps durable invocations (`SupportsDurable` with `DurableRows`)."""

    supports_pages: ClassVar[bool | None] = None
    """The store pages its listings (`SupportsPages`); None: when the store implements it."""

    supports_counts: ClassVar[bool | None] = None
    """The store counts by status (`SupportsCounts`); None: when the store implements it."""

    supports_reading_snapshots: ClassVar[bool] = False
    """`Store.reading` answers from one snapshot: a commit made through another store opened
    by `reopen` is not visible inside the block (needs `supports_reopen`)."""

    backlog_size: ClassVar[int] = 10_000
    """Consumed events loaded into one topic for the bounded-peek test (``keep conformance
    --thorough``: 100,000)."""

    process_workers: ClassVar[int] = 3
    """Processes (and threads) racing in the concurrency tests."""

    @pytest.fixture(autouse=True)
    def _capability_record(self, request: pytest.FixtureRequest) -> Iterator[None]:
        """Mark the test as one of the store suite's and, after it, record the capabilities
        the class declares (`declares`), for the certificate."""
        self._item = request.node
        request.node.user_properties.append((SUITE_PROPERTY, type(self).__name__))
        yield
        store = request.node.funcargs.get("store")
        declared = [c.value for c in CAPABILITY_FLAGS if self.declares(c, store)]
        request.node.user_properties.append((DECLARES_PROPERTY, ",".join(declared)))

    def declares(self, capability: StoreCapability, store: Store | None = None) -> bool:
        """Whether this class declares `capability` (its ``supports_*`` flag; for pages and
        counts left at None, whether `store` implements the protocol)."""
        flag = getattr(self, CAPABILITY_FLAGS[capability])
        if flag is None and store is not None:
            protocol = SupportsPages if capability is StoreCapability.PAGES else SupportsCounts
            return isinstance(store, protocol)
        return bool(flag)

    def require(self, capability: StoreCapability, store: Store | None = None) -> None:
        """Record that this test needs `capability`; skip it when it is not declared."""
        declared = self.declares(capability, store)
        item = getattr(self, "_item", None)
        if item is not None:
            state = "declared" if declared else "not declared"
            item.user_properties.append((CAPABILITY_PROPERTY, f"{capability.value}={state}"))
        if not declared:
            pytest.skip(
                f"{type(self).__name__} does not declare {CAPABILITY_FLAGS[capability]} "
                f"(the {capability.value!r} capability)"
            )

    def pager(self, store: Store) -> SupportsPages:
        """`store` as `SupportsPages`; the test needs the ``pages`` capability."""
        self.require(StoreCapability.PAGES, store)
        assert isinstance(store, SupportsPages), (
            "the pages capability is declared but the store does not implement SupportsPages"
        )
        return store

    def counter(self, store: Store) -> SupportsCounts:
        """`store` as `SupportsCounts`; the test needs the ``counts`` capability."""
        self.require(StoreCapability.COUNTS, store)
        assert isinstance(store, SupportsCounts), (
            "the counts capability is declared but the store does not implement SupportsCounts"
        )
        return store

    def at_once(self, calls: Sequence[Callable[[], _T]]) -> list[_T]:
        """The results of `calls`, in their order, each run on its own thread and all
        released together. Skips a class that does not declare ``supports_threads``; a call
        that raised fails the test with its exception."""
        if not self.supports_threads:
            pytest.skip(f"{type(self).__name__} does not declare supports_threads")
        barrier = threading.Barrier(len(calls))
        results: dict[int, _T] = {}
        failures: list[BaseException] = []

        def call(index: int) -> None:
            try:
                barrier.wait(30)
                results[index] = calls[index]()
            except BaseException as exc:
                failures.append(exc)

        threads = [threading.Thread(target=call, args=(i,)) for i in range(len(calls))]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(60)
        assert not failures, f"a concurrent call raised {failures[0]!r}"
        assert len(results) == len(calls), "a concurrent call did not finish within 60 s"
        return [results[i] for i in range(len(calls))]

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
        """A URL `keep_sdk.open_store` accepts in any process (a scheme of the installed
        plugins), naming the `store` fixture's data."""
        return None

    @pytest.fixture
    def reopen(self, store_url: str | None, clock: ManualClock) -> Iterator[Callable[[], Store]]:
        """Open the `store` fixture's data again (default: `keep_sdk.open_store(store_url)`); the
        stores it opened are closed after the test."""
        self.require(StoreCapability.REOPEN)
        if store_url is None:
            raise NotImplementedError("supports_reopen needs `store_url` or a `reopen` override")
        opened: list[Store] = []

        def again() -> Store:
            store = open_url(store_url, clock=clock)
            opened.append(store)
            return store

        yield again
        for store in opened:
            store.close()

    @pytest.fixture
    def faults(self, store: Store) -> Iterator[FaultInjector]:
        """A fault injector installed as the store's fault hook."""
        self.require(StoreCapability.FAULT_INJECTION)
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
        self.require(StoreCapability.PROCESSES)
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
