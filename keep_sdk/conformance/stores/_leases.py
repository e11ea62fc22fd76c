"""Per-workflow leases: exclusive until expiry, compare-and-swap takeover, fencing tokens."""

from __future__ import annotations

import datetime as dt
import threading
import time

import pytest

from keep_sdk.conformance.stores._base import StoreTestBase
from keep_sdk.conformance.stores._support import ManualClock
from keep_sdk.errors import LeaseLost
from keep_sdk.stores import Store, TransactionalStore

__all__ = ["LeaseTests"]

TTL = dt.timedelta(seconds=30)


_MINUTE = dt.timedelta(minutes=1)


class LeaseTests(StoreTestBase):
    """acquire_lease, heartbeat_lease, release_lease, get_lease, list_leases."""

    def test_a_lease_is_exclusive_until_it_expires(self, store: Store, clock: ManualClock) -> None:
        wf = self.deploy(store)
        assert store.get_lease(wf) is None
        lease = store.acquire_lease(wf, "w1", ttl=TTL)
        assert lease is not None
        assert (lease.owner, lease.token, lease.expires_at) == ("w1", 1, clock() + TTL)
        assert store.acquire_lease(wf, "w2", ttl=TTL) is None
        clock.advance(29)
        assert store.acquire_lease(wf, "w2", ttl=TTL) is None
        assert store.get_lease(wf) == lease
        other = self.deploy(store)
        assert store.acquire_lease(other, "w2", ttl=TTL) is not None

    def test_an_expired_lease_is_taken_over_and_the_old_holder_loses_it(
        self, store: Store, clock: ManualClock
    ) -> None:
        wf = self.deploy(store)
        old = store.acquire_lease(wf, "w1", ttl=TTL)
        assert old is not None
        clock.advance(30)
        new = store.acquire_lease(wf, "w2", ttl=TTL)
        assert new is not None
        assert (new.owner, new.token) == ("w2", old.token + 1)
        with pytest.raises(LeaseLost):
            store.heartbeat_lease(old, ttl=TTL)
        with pytest.raises(LeaseLost):
            store.release_lease(old)
        assert store.get_lease(wf) == new

    def test_a_heartbeat_extends_a_live_lease_only(self, store: Store, clock: ManualClock) -> None:
        wf = self.deploy(store)
        lease = store.acquire_lease(wf, "w1", ttl=TTL)
        assert lease is not None
        clock.advance(20)
        renewed = store.heartbeat_lease(lease, ttl=TTL)
        assert (renewed.token, renewed.expires_at) == (lease.token, clock() + TTL)
        clock.advance(20)
        assert store.acquire_lease(wf, "w2", ttl=TTL) is None
        clock.advance(10)
        with pytest.raises(LeaseLost):
            store.heartbeat_lease(renewed, ttl=TTL)

    def test_the_owner_renews_and_release_frees_the_lease(
        self, store: Store, clock: ManualClock
    ) -> None:
        wf = self.deploy(store)
        lease = store.acquire_lease(wf, "w1", ttl=TTL)
        assert lease is not None
        again = store.acquire_lease(wf, "w1", ttl=TTL)
        assert again is not None
        assert again.token == lease.token
        store.release_lease(again)
        taken = store.acquire_lease(wf, "w2", ttl=TTL)
        assert taken is not None
        assert taken.token == lease.token + 1

    def test_list_leases_returns_every_row_as_get_lease_does(
        self, store: Store, clock: ManualClock
    ) -> None:
        first, second = self.deploy(store), self.deploy(store)
        mine = {first, second}
        assert [lease for lease in store.list_leases() if lease.workflow in mine] == []
        held = store.acquire_lease(second, "w2", ttl=TTL)
        gone = store.acquire_lease(first, "w1", ttl=TTL)
        assert held is not None
        assert gone is not None
        store.release_lease(gone)
        listed = {lease.workflow: lease for lease in store.list_leases() if lease.workflow in mine}
        assert listed == {first: store.get_lease(first), second: store.get_lease(second)}
        assert {name: lease.expired(clock()) for name, lease in listed.items()} == {
            first: True,
            second: False,
        }

    def test_a_lease_row_update_is_a_compare_and_swap_on_that_workflows_lease(
        self, store: Store, clock: ManualClock
    ) -> None:
        """`Transaction.update_lease` writes only the row of `before`'s workflow, and only
        while it still has `before`'s token, owner and expiry (a `TransactionalStore`)."""
        if not isinstance(store, TransactionalStore):
            pytest.skip(f"{type(store).__name__} is not built on TransactionalStore")
        first, second = self.deploy(store), self.deploy(store)
        for wf in (first, second):
            assert store.acquire_lease(wf, "w1", ttl=dt.timedelta(seconds=30)) is not None
        other = store.get_lease(second)
        with store.transaction(write=True) as tx:
            before = tx.lease(first)
            assert before is not None
            after = before.model_copy(update={"expires_at": before.expires_at + _MINUTE})
            for stale in (
                before.model_copy(update={"token": before.token + 1}),
                before.model_copy(update={"owner": "w2"}),
                before.model_copy(update={"expires_at": before.expires_at - _MINUTE}),
            ):
                assert tx.update_lease(stale, after) is False, f"a stale lease was written: {stale}"
            assert tx.update_lease(before, after) is True
        assert store.get_lease(first) == after
        assert store.get_lease(second) == other, "updating one workflow's lease changed another's"

    def test_exactly_one_of_racing_threads_takes_over_an_expired_lease(
        self, store: Store, clock: ManualClock
    ) -> None:
        if not self.supports_threads:
            pytest.skip(f"{type(self).__name__} does not declare supports_threads")
        wf = self.deploy(store)
        assert store.acquire_lease(wf, "dead", ttl=TTL) is not None
        clock.advance(31)
        start_at = time.time() + 0.2
        won: list[str] = []

        def take(owner: str) -> None:
            time.sleep(max(0.0, start_at - time.time()))
            if store.acquire_lease(wf, owner, ttl=TTL) is not None:
                won.append(owner)

        threads = [threading.Thread(target=take, args=(f"w{i}",)) for i in range(6)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(60)
        assert len(won) == 1
        current = store.get_lease(wf)
        assert current is not None
        assert (current.owner, current.token) == (won[0], 2)

    def test_exactly_one_of_racing_processes_acquires_a_lease(
        self, store: Store, store_url: str | None
    ) -> None:
        url = self.require_processes(store_url)
        wf = self.deploy(store)
        start_at = str(time.time() + 1.5)
        children = [self.spawn(url, "acquire", wf, f"p{i}", start_at) for i in range(3)]
        assert sorted(r["acquired"] for r in self.results(children)) == [False, False, True]
