"""Poll claims under races and after expiry. For stores that declare ``supports_durable``.

Of several workers claiming one invocation at the same instant (threads, and
processes where the store declares ``supports_processes``), exactly one wins,
whether the invocation was free or its claim had expired. A claim that expired
never shields an invocation from its timeout.
"""

from __future__ import annotations

import datetime as dt
import subprocess
import sys
import threading
import time

import pytest

from keep_sdk.conformance.stores._durable import DurableTestBase
from keep_sdk.conformance.stores._support import ManualClock
from keep_sdk.contract.durable import Invocation, InvocationStatus, Pending
from keep_sdk.model import RunStatus
from keep_sdk.stores import Store

__all__ = ["ClaimRaceTests"]

_HOUR = dt.timedelta(hours=1)
_RACERS = 6


class ClaimRaceTests(DurableTestBase):
    """claim_invocation is a compare-and-swap; an expired claim still times out."""

    def poller(
        self, store: Store, clock: ManualClock, *, timeout_at: dt.datetime | None = None
    ) -> Invocation:
        """A parked invocation that polls every minute."""
        durable = self.durable(store)
        _, invocation = self.started(store, timeout_at=timeout_at)
        invocation, run = durable.record_start_answer(
            invocation.id, Pending(token="t0"), next_poll_at=clock() + dt.timedelta(minutes=1)
        )
        assert run.status is RunStatus.PAUSED_WAITING
        return invocation

    def race(self, store: Store, invocation_id: str, until: dt.datetime) -> list[str]:
        """`_RACERS` threads claim the invocation at one instant; the owners that won."""
        if not self.supports_threads:
            pytest.skip(f"{type(self).__name__} does not declare supports_threads")
        durable = self.durable(store)
        barrier = threading.Barrier(_RACERS)
        won: list[str] = []
        failed: list[BaseException] = []

        def claim(owner: str) -> None:
            try:
                barrier.wait(30)
                if durable.claim_invocation(invocation_id, owner, until=until) is not None:
                    won.append(owner)
            except BaseException as exc:
                failed.append(exc)

        threads = [threading.Thread(target=claim, args=(f"w{i}",)) for i in range(_RACERS)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(60)
        assert not failed, f"a claimer raised {failed[0]!r}"
        return won

    def test_exactly_one_of_racing_threads_claims_a_free_invocation(
        self, store: Store, clock: ManualClock
    ) -> None:
        invocation = self.poller(store, clock)
        won = self.race(store, invocation.id, clock() + _HOUR)
        assert len(won) == 1, f"{len(won)} of {_RACERS} racing claimers won: {won}"
        stored = self.durable(store).get_invocation(invocation.id)
        assert (stored.claim_owner, stored.claim_version) == (
            won[0],
            invocation.claim_version + 1,
        )

    def test_exactly_one_of_racing_threads_takes_over_an_expired_claim(
        self, store: Store, clock: ManualClock
    ) -> None:
        durable = self.durable(store)
        invocation = self.poller(store, clock)
        dead = durable.claim_invocation(invocation.id, "dead", until=clock() + _HOUR)
        assert dead is not None
        clock.advance(2 * 3600)
        won = self.race(store, invocation.id, clock() + _HOUR)
        assert len(won) == 1, f"{len(won)} of {_RACERS} claimers took over the expired claim"
        stored = durable.get_invocation(invocation.id)
        assert (stored.claim_owner, stored.claim_version) == (won[0], dead.claim_version + 1)

    def test_exactly_one_of_racing_processes_claims_an_invocation(
        self, store: Store, store_url: str | None, clock: ManualClock
    ) -> None:
        """Two processes (each start costs seconds; the thread races cover more claimers)."""
        url = self.require_processes(store_url)
        invocation = self.poller(store, clock)
        start_at = str(time.time() + 1.5)
        children = [
            subprocess.Popen(
                [
                    sys.executable,
                    "-m",
                    "keep_sdk.conformance.stores._claim_child",
                    url,
                    invocation.id,
                    f"p{i}",
                    start_at,
                ],
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
            )
            for i in range(2)
        ]
        claimed = sorted(r["claimed"] for r in self.results(children))
        assert claimed == [False, True], f"of two racing processes {claimed.count(True)} claimed"
        stored = self.durable(store).get_invocation(invocation.id)
        assert stored.claim_version == invocation.claim_version + 1

    def test_an_invocation_whose_poll_claim_expired_still_times_out(
        self, store: Store, clock: ManualClock
    ) -> None:
        durable = self.durable(store)
        invocation = self.poller(store, clock, timeout_at=clock() + _HOUR)
        claim = durable.claim_invocation(
            invocation.id, "w1", until=clock() + dt.timedelta(minutes=10)
        )
        assert claim is not None
        clock.advance(3600)
        expired = [i.id for i in durable.expired_invocations(clock(), limit=1000)]
        assert invocation.id in expired, "an invocation at its timeout is not listed expired"
        timed_out = durable.time_out_invocation(invocation.id)
        assert timed_out is not None, "an invocation whose claim expired did not time out"
        ended, run = timed_out
        assert (ended.status, ended.claim_owner, run.status) == (
            InvocationStatus.TIMED_OUT,
            None,
            RunStatus.PAUSED_TIMEOUT,
        )
        assert invocation.id not in [i.id for i in durable.due_polls(clock(), limit=1000)]
        assert invocation.id not in [i.id for i in durable.expired_invocations(clock(), 1000)]

    def test_an_invocation_claimed_past_its_timeout_still_times_out(
        self, store: Store, clock: ManualClock
    ) -> None:
        durable = self.durable(store)
        invocation = self.poller(store, clock, timeout_at=clock() + _HOUR)
        clock.advance(2 * 3600)
        claim = durable.claim_invocation(invocation.id, "late", until=clock() + _HOUR)
        assert claim is not None
        assert invocation.id in [i.id for i in durable.expired_invocations(clock(), 1000)]
        timed_out = durable.time_out_invocation(invocation.id)
        assert timed_out is not None, "a live claim hid an invocation past its timeout"
        assert timed_out[0].status is InvocationStatus.TIMED_OUT
