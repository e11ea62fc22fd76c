"""Clauses of the `DurableRows` protocol itself, for a store built on `TransactionalStore`.

The commit points read a row and write it back in one write transaction, so on a store
that serialises its writers a row method that forgets its condition or its order still
passes every commit-point clause, and fails only under a real race or on another
database. These clauses call the row methods directly inside one write transaction:
conditional updates refuse a stale `before`, inserts refuse a second invocation by id,
correlation key or run with `MutationConflict`, an applied notification leaves the
pending scan, and lists come back in the order the protocol names. A store that does not
build on `TransactionalStore` has no such rows; its tests skip with that reason.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator
from contextlib import contextmanager
from typing import cast

import pytest

from keep_sdk.conformance.stores._durable import DurableTestBase
from keep_sdk.contract.durable import Attempt, AttemptKind, InvocationStatus, NotificationOutcome
from keep_sdk.errors import MutationConflict
from keep_sdk.stores import DurableRows, Store, TransactionalStore

__all__ = ["DurableRowTests"]

_EVERY = 1_000_000
"""A scan limit above any test database's rows: what earlier tests left pending must not
crowd this test's rows out of an oldest-first scan."""

_ROW_METHODS = (
    "invocation",
    "invocations",
    "insert_invocation",
    "update_invocation",
    "notification",
    "notifications",
    "pending_notifications",
    "update_notification",
    "append_attempt",
    "attempts",
)


class DurableRowTests(DurableTestBase):
    """The row methods' own promises: compare-and-swap, refusals, order, the pending scan."""

    @contextmanager
    def rows(self, store: Store) -> Iterator[DurableRows]:
        """A write transaction of `store` as `DurableRows` (skips a store without them)."""
        self.durable(store)
        if not isinstance(store, TransactionalStore):
            pytest.skip(
                f"{type(store).__name__} is not built on TransactionalStore: its durable rows "
                "are certified through the commit points only"
            )
        with store.transaction(write=True) as tx:
            missing = [name for name in _ROW_METHODS if not hasattr(tx, name)]
            assert not missing, (
                "the durable capability is declared but the transaction does not implement "
                f"keep_sdk.stores.DurableRows (no {', '.join(missing)})"
            )
            yield cast(DurableRows, tx)

    def test_an_invocation_update_is_a_compare_and_swap_on_status_and_claim_version(
        self, store: Store
    ) -> None:
        _, invocation = self.started(store)
        later = invocation.updated_at + dt.timedelta(seconds=1)
        with self.rows(store) as rows:
            before = rows.invocation(invocation.id)
            assert before == invocation
            claimed = before.model_copy(
                update={"claim_version": before.claim_version + 1, "updated_at": later}
            )
            assert rows.update_invocation(before, claimed) is True
            other = before.model_copy(update={"error": "a stale writer", "updated_at": later})
            assert rows.update_invocation(before, other) is False, (
                "update_invocation wrote over a row whose claim_version changed since `before`"
            )
            assert rows.invocation(invocation.id) == claimed
            stale = claimed.model_copy(update={"status": InvocationStatus.COMPLETED})
            assert rows.update_invocation(stale, other) is False, (
                "update_invocation wrote over a row whose status differs from `before`"
            )
            assert rows.invocation(invocation.id) == claimed

    @pytest.mark.parametrize("same", ["id", "correlation_key", "run_id"])
    def test_a_second_invocation_with_the_same_id_key_or_run_is_refused_by_name(
        self, store: Store, same: str
    ) -> None:
        _, invocation = self.started(store)
        fresh = {"id": "inv-second", "correlation_key": "key-second", "run_id": "run-second"}
        fresh[same] = getattr(invocation, same)
        second = invocation.model_copy(update=fresh)
        with pytest.raises(MutationConflict) as raised, self.rows(store) as rows:
            rows.insert_invocation(second)
        assert second.id in str(raised.value), (
            f"the refusal does not name the invocation: {raised.value}"
        )
        with self.rows(store) as rows:
            assert rows.invocation(invocation.id) == invocation
            assert rows.invocation("inv-second") is None

    def test_invocations_list_in_creation_order_after_updates(self, store: Store) -> None:
        made = [self.started(store)[1] for _ in range(3)]
        with self.rows(store) as rows:
            first = made[0]
            assert rows.update_invocation(
                first, first.model_copy(update={"claim_version": 1, "error": "x" * 200})
            )
        with self.rows(store) as rows:
            ours = [i.id for i in rows.invocations() if i.id in {m.id for m in made}]
        assert ours == [m.id for m in made]

    def test_a_notification_update_is_a_compare_and_swap_that_leaves_the_pending_scan(
        self, store: Store
    ) -> None:
        durable = self.durable(store)
        _, invocation = self.parked(store)
        first = durable.receive_notification(invocation.correlation_key, {"n": 1}, source="a")
        second = durable.receive_notification(invocation.correlation_key, {"n": 2}, source="b")
        with self.rows(store) as rows:
            assert {n.id for n in rows.pending_notifications(_EVERY)} >= {first.id, second.id}
            dropped = first.model_copy(update={"outcome": NotificationOutcome.DUPLICATE})
            assert rows.update_notification(first, dropped) is True
            again = first.model_copy(update={"outcome": NotificationOutcome.IGNORED})
            assert rows.update_notification(first, again) is False, (
                "update_notification wrote over a notification whose outcome changed"
            )
            assert rows.notification(first.id) == dropped
            pending = [n.id for n in rows.pending_notifications(_EVERY)]
            assert first.id not in pending, "a notification no longer pending is still scanned"
            assert second.id in pending
            assert [n.id for n in rows.notifications(invocation.id)] == [first.id, second.id]

    def test_notifications_list_oldest_first_after_updates_in_any_order(self, store: Store) -> None:
        """An update may move a row on disk (PostgreSQL writes a new row version): the
        listing orders by arrival, not by where the rows lie."""
        durable = self.durable(store)
        _, invocation = self.parked(store)
        made = [
            durable.receive_notification(invocation.correlation_key, {"n": n}, source="s")
            for n in range(12)
        ]
        for index in (0, 7, 3, 11, 5, 1):
            with self.rows(store) as rows:
                before = made[index]
                after = before.model_copy(update={"outcome": NotificationOutcome.DUPLICATE})
                assert rows.update_notification(before, after) is True
        with self.rows(store) as rows:
            listed = [n.id for n in rows.notifications(invocation.id)]
        assert listed == [n.id for n in made], "notifications do not list oldest first"

    def test_attempts_get_increasing_seqs_and_list_in_seq_order(self, store: Store) -> None:
        _, invocation = self.started(store)
        with self.rows(store) as rows:
            already = len(rows.attempts(invocation.id))
            stored = [
                rows.append_attempt(
                    Attempt(
                        invocation_id=invocation.id,
                        seq=1,
                        kind=AttemptKind.POLL,
                        outcome="pending",
                        at=invocation.created_at,
                        detail=f"poll {n}",
                    )
                )
                for n in range(3)
            ]
            listed = rows.attempts(invocation.id)
        seqs = [a.seq for a in stored]
        assert seqs[0] >= max([1, *(a.seq + 1 for a in listed[:already])]), seqs
        assert seqs == sorted(set(seqs)), f"attempt seqs must increase: {seqs}"
        assert listed[already:] == stored
        assert [a.detail for a in listed[already:]] == ["poll 0", "poll 1", "poll 2"]
