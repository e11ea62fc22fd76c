"""Deliberately broken stores: each breaks one rule the store suite must catch."""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from keep_sdk.model import EventStatus, LedgerEntry, PrepareResult, RunPhase, RunRecord
from keep_sdk.stores import Lease, MemoryStore, Publication, PublishOutcome, PublishResult, SqlStore
from keep_sdk.stores import _rules as rules
from keep_sdk.stores._transaction import Transaction
from keep_sdk.stores.memory import _MemoryTransaction


class RepublishingStore(MemoryStore):
    """Publish is last-write-wins whatever the status (Keep.AI's behaviour)."""

    def publish(
        self, workflow: str, publication: Publication, *, created_by: str | None = None
    ) -> PublishResult:
        found = self.events_by_ids(workflow, publication.topic, [publication.message_id])
        if not found:
            return super().publish(workflow, publication, created_by=created_by)
        event = found[0].model_copy(
            update={"title": publication.title, "payload": publication.payload}
        )
        with self.transaction() as tx:
            tx.update_event(found[0], event)
        return PublishResult(outcome=PublishOutcome.REPLACED, event=event)


class NonAtomicStore(MemoryStore):
    """Keeps whatever a commit point wrote before it failed."""

    @contextmanager
    def transaction(self, *, write: bool = True) -> Iterator[Transaction]:
        with self._lock:
            yield _MemoryTransaction(self._tables)


class NonExclusiveReservationStore(MemoryStore):
    """Reserves the listed events whatever their status (silently taking them over)."""

    def save_prepare_result(self, run_id: str, result: PrepareResult) -> RunRecord:
        with self.transaction() as tx:
            run = self.get_run(run_id)
            for topic, ids in result.reserved_ids.items():
                for event in tx.events_by_keys(run.workflow, topic, ids):
                    tx.update_event(
                        event,
                        event.model_copy(
                            update={"status": EventStatus.RESERVED, "reserved_by": run.id}
                        ),
                    )
            updated = run.model_copy(
                update={
                    "prepare_result": result,
                    "phase": RunPhase.PREPARED,
                    "updated_at": self.clock(),
                }
            )
            tx.update_run(run, updated)
            return updated


class ManyActiveRunsStore(MemoryStore):
    """Lets a workflow have several active runs."""

    def __init__(self, **options: Any) -> None:
        super().__init__(**options)
        self._tables.active = _Forgetful()


class _Forgetful(dict[str, str]):
    def get(self, key: str, default: Any = None) -> Any:
        return default

    def __delitem__(self, key: str) -> None:
        self.pop(key, None)


class LeaseWithoutCompareAndSwapStore(MemoryStore):
    """Hands the lease to whoever asks, live or not."""

    def acquire_lease(self, workflow: str, owner: str, *, ttl: dt.timedelta) -> Lease | None:
        with self.transaction() as tx:
            now = self.clock()
            current = tx.lease(workflow)
            lease = Lease(
                workflow=workflow,
                owner=owner,
                token=(current.token + 1) if current else 1,
                acquired_at=now,
                expires_at=now + ttl,
            )
            if current is None:
                tx.insert_lease(lease)
            else:
                tx.update_lease(current, lease)
            return lease


class ScanningPeekStore(MemoryStore):
    """Peeks by scanning every event of the workflow (cost grows with consumed events)."""

    def pending_events(self, workflow: str, topic: str, *, limit: int) -> list[Any]:
        found = [
            e for e in self.list_events(workflow, topic=topic) if e.status is EventStatus.PENDING
        ]
        return found[:limit]

    def peek_cost(self, workflow: str, topic: str, *, limit: int) -> int:
        return len(self.list_events(workflow, topic=topic))


class LazyLedgerStore(SqlStore):
    """Keeps the mutation intent in memory and writes it only once the mutation is applied."""

    def __init__(self, url: str, **options: Any) -> None:
        super().__init__(url, **options)
        self.unwritten: dict[str, LedgerEntry] = {}

    def record_mutation_intent(self, run_id: str, **details: Any) -> LedgerEntry:
        run = self.get_run(run_id)
        rules.check_intent(run, None)
        now = self._now()
        entry = LedgerEntry(
            id=rules.new_id("mut"),
            run_id=run.id,
            workflow=run.workflow,
            handler=run.handler,
            created_at=now,
            updated_at=now,
            **details,
        )
        self.unwritten[entry.id] = entry
        return entry

    def ledger_entry_for_run(self, run_id: str) -> LedgerEntry | None:
        for entry in self.unwritten.values():
            if entry.run_id == run_id:
                return entry
        return super().ledger_entry_for_run(run_id)
