"""Per-workflow leases a worker holds while it works on a workflow, and their heartbeat.

A worker runs a workflow only under its lease; the store hands an expired
lease to exactly one new owner (compare-and-swap, new fencing token), so two
workers never run one workflow at once and a killed worker's workflows move
on within the lease time, or at once when the holder ran on this host and its
process is gone (`holder_is_dead`).
"""

from __future__ import annotations

import datetime as dt
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress

from keep_sdk.errors import LeaseLost
from keep_sdk.scheduler._holders import holder_is_dead
from keep_sdk.scheduler._retry import WORKER_RETRY, RetryPolicy, is_transient
from keep_sdk.scheduler._share import PRESENCE_SLOTS, presence_name
from keep_sdk.stores import Lease, Store, utc_now

__all__ = ["LeaseKeeper"]


class LeaseKeeper:
    """The leases one worker holds. Thread-safe: a heartbeat thread may renew them."""

    def __init__(
        self,
        store: Store,
        owner: str,
        *,
        ttl: dt.timedelta,
        clock: Callable[[], dt.datetime] | None = None,
    ) -> None:
        self.store = store
        self.owner = owner
        self.ttl = ttl
        self.clock = clock or utc_now
        self._held: dict[str, Lease] = {}
        self._presence: Lease | None = None
        self._present = False
        self._lock = threading.Lock()

    @property
    def held(self) -> list[str]:
        """The workflows this worker holds, by name."""
        with self._lock:
            return sorted(self._held)

    def claim(self, workflow: str) -> Lease | None:
        """Acquire or renew the workflow's lease; None while another worker holds it.

        A lease held with more than half its time left is used as it is (nobody
        can have taken it over before it expires), which saves a write per step.
        """
        with self._lock:
            held = self._held.get(workflow)
        if held is not None and self._fresh(held):
            return held
        lease = self.store.acquire_lease(workflow, self.owner, ttl=self.ttl)
        if lease is None and self._take_over_from_the_dead(workflow):
            lease = self.store.acquire_lease(workflow, self.owner, ttl=self.ttl)
        with self._lock:
            if lease is None:
                self._held.pop(workflow, None)
            else:
                self._held[workflow] = lease
        return lease

    def fresh(self, workflow: str) -> bool:
        """Whether this worker holds the workflow's lease with more than half its time left
        (`claim` would use it without a write). A lease the heartbeat found lost is not held."""
        with self._lock:
            held = self._held.get(workflow)
        return held is not None and self._fresh(held)

    def _fresh(self, lease: Lease) -> bool:
        return lease.expires_at - self.clock() > self.ttl / 2

    def _take_over_from_the_dead(self, workflow: str) -> bool:
        """Release the lease of a holder that is provably dead; whether it was released."""
        current = self.store.get_lease(workflow)
        if current is None or current.owner == self.owner:
            return False
        if current.expired(self.clock()) or not holder_is_dead(current.owner, current.acquired_at):
            return False
        with suppress(LeaseLost):
            self.store.release_lease(current)
            return True
        return False

    def release(self, workflow: str) -> None:
        """Give the workflow's lease up (nothing happens if it was lost already)."""
        with self._lock:
            lease = self._held.pop(workflow, None)
        if lease is not None:
            with suppress(LeaseLost):
                self.store.release_lease(lease)

    def release_all(self, *, keep: set[str] | None = None) -> None:
        """Release every lease except those of the workflows in `keep`."""
        for workflow in self.held:
            if keep is None or workflow not in keep:
                self.release(workflow)

    def announce(self) -> None:
        """Hold this worker's presence row, so that other workers count it while it holds
        no workflow (`Share`); heartbeats renew it (or take it again after a store
        error), `withdraw` gives it up."""
        with self._lock:
            self._present = True
        lease = self._take_a_slot()
        with self._lock:
            if self._present:
                self._presence = lease

    def _take_a_slot(self) -> Lease | None:
        """The first presence slot that is free or expired, taken; None if all are held."""
        for slot in range(PRESENCE_SLOTS):
            lease = self.store.acquire_lease(presence_name(slot), self.owner, ttl=self.ttl)
            if lease is not None:
                return lease
        return None

    def withdraw(self) -> None:
        """Give the presence row up (nothing happens if it was lost already)."""
        with self._lock:
            lease, self._presence, self._present = self._presence, None, False
        if lease is not None:
            with suppress(LeaseLost):
                self.store.release_lease(lease)

    def _renew_presence(self) -> None:
        with self._lock:
            present, lease = self._present, self._presence
        if not present:
            return
        renewed: Lease | None
        try:
            if lease is None:
                raise LeaseLost("the presence row was never written")
            renewed = self.store.heartbeat_lease(lease, ttl=self.ttl)
        except LeaseLost:
            renewed = self._take_a_slot()
        with self._lock:
            if self._present and self._presence == lease:
                self._presence = renewed

    def heartbeat(self) -> list[str]:
        """Extend every held lease and the presence row; return the workflows whose lease
        was lost."""
        self._renew_presence()
        with self._lock:
            leases = list(self._held.values())
        lost = []
        for lease in leases:
            try:
                renewed = self.store.heartbeat_lease(lease, ttl=self.ttl)
            except LeaseLost:
                lost.append(lease.workflow)
                with self._lock:
                    if self._held.get(lease.workflow) == lease:
                        del self._held[lease.workflow]
                continue
            with self._lock:
                if self._held.get(lease.workflow) == lease:
                    self._held[lease.workflow] = renewed
        return lost

    @contextmanager
    def heartbeats(self, every_s: float, retry: RetryPolicy = WORKER_RETRY) -> Iterator[None]:
        """Renew the held leases every `every_s` seconds on a thread while inside the block.

        A beat that fails on a transient store error is tried again after `retry`'s delay
        (never later than the next beat), so leases are renewed as soon as the store
        answers again; any other error waits for the next beat."""
        stop = threading.Event()

        def beat() -> None:
            failures = 0
            pause = every_s
            while not stop.wait(pause):
                try:
                    self.heartbeat()
                except Exception as exc:
                    failures = failures + 1 if is_transient(exc) else 0
                    pause = min(every_s, retry.delay(failures)) if failures else every_s
                    continue
                failures, pause = 0, every_s

        thread = threading.Thread(target=beat, name=f"keep-heartbeat-{self.owner}", daemon=True)
        thread.start()
        try:
            yield
        finally:
            stop.set()
            thread.join()
