"""A hypothesis state machine drives the memory store and the SQLite store side by side.

Publish, begin, reserve, commit, abort (with or without releasing), skip and
reopen; after every step both stores must show the same state and every
refused step must be refused by both with the same error class.
"""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, rule

from keep_sdk.conformance import ManualClock
from keep_sdk.conformance.stores._support import STANDARD_HANDLERS
from keep_sdk.errors import KeepError
from keep_sdk.model import FailureKind, HandlerKind, PrepareResult, Reservation, RunStatus
from keep_sdk.stores import MemoryStore, Publication, SqlStore, Store

WF = "wf"
MESSAGE_IDS = st.sampled_from([f"m{i}" for i in range(6)])
TOPICS = st.sampled_from(["in", "other"])


class MemoryAgreesWithSqlite(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.clock = ManualClock()
        self.directory = tempfile.mkdtemp(prefix="keep-stateful-")
        self.url = f"sqlite:///{self.directory}/keep.db"
        self.memory = MemoryStore(clock=self.clock)
        self.sql = SqlStore(self.url, clock=self.clock)
        self.runs: list[tuple[str, str]] = []
        for store in (self.memory, self.sql):
            store.deploy(WF, "source", {}, handlers=STANDARD_HANDLERS)

    def both(self, action: Callable[[Store, int], Any]) -> tuple[Any, Any]:
        """Apply `action` to both stores; both must succeed or raise the same error class."""
        outcomes = []
        for side, store in enumerate((self.memory, self.sql)):
            try:
                outcomes.append(("ok", action(store, side)))
            except KeepError as exc:
                outcomes.append(("error", type(exc).__name__))
        (kind_m, value_m), (kind_s, value_s) = outcomes
        assert kind_m == kind_s, f"memory {kind_m} {value_m!r} but sqlite {kind_s} {value_s!r}"
        if kind_m == "error":
            assert value_m == value_s
        return value_m, value_s

    def current_run(self, side: int) -> str:
        return self.runs[-1][side] if self.runs else "run_none"

    @rule(topic=TOPICS, message_id=MESSAGE_IDS, title=st.sampled_from(["a", "b"]))
    def publish(self, topic: str, message_id: str, title: str) -> None:
        memory, sql = self.both(
            lambda s, _: s.publish(
                WF, Publication(topic=topic, message_id=message_id, title=title, payload=title)
            )
        )
        assert memory.outcome == sql.outcome

    @rule()
    def begin(self) -> None:
        memory, sql = self.both(lambda s, _: s.begin_run(WF, "process", HandlerKind.CONSUMER))
        if isinstance(memory, str):
            return
        self.runs.append((memory.id, sql.id))

    @rule(ids=st.lists(MESSAGE_IDS, max_size=3, unique=True), topic=TOPICS)
    def reserve(self, ids: list[str], topic: str) -> None:
        reservations = [Reservation(topic=topic, ids=ids)] if ids else []
        self.both(
            lambda s, side: s.save_prepare_result(
                self.current_run(side), PrepareResult(reservations=reservations)
            )
        )

    @rule(state=st.integers(0, 3))
    def commit(self, state: int) -> None:
        self.both(lambda s, side: s.commit_consumer_run(self.current_run(side), state=state))

    @rule(
        release=st.booleans(),
        status=st.sampled_from([RunStatus.CRASHED, RunStatus.PAUSED_TRANSIENT]),
    )
    def abort(self, release: bool, status: RunStatus) -> None:
        self.both(
            lambda s, side: s.set_run_status(
                self.current_run(side),
                status,
                failure=FailureKind.TRANSIENT,
                release_reservations=release,
            )
        )

    @rule()
    def resume(self) -> None:
        self.both(lambda s, side: s.set_run_status(self.current_run(side), RunStatus.ACTIVE))

    @rule(topic=TOPICS, message_id=MESSAGE_IDS)
    def skip(self, topic: str, message_id: str) -> None:
        def skip_in(store: Store, _: int) -> Any:
            found = store.events_by_ids(WF, topic, [message_id])
            return store.skip_event(found[0].id, actor="alice") if found else None

        self.both(skip_in)

    @rule()
    def reopen(self) -> None:
        self.sql.close()
        self.sql = SqlStore(self.url, clock=self.clock)

    @rule(seconds=st.integers(1, 120))
    def advance_clock(self, seconds: int) -> None:
        self.clock.advance(seconds)

    def normalized(self, store: Store, side: int) -> dict[str, Any]:
        index = {pair[side]: i for i, pair in enumerate(self.runs)}
        events = {e.id: (e.topic, e.message_id) for e in store.list_events(WF)}
        return {
            "events": [
                (
                    e.topic,
                    e.message_id,
                    e.title,
                    e.payload,
                    e.status,
                    e.attempt,
                    index.get(e.reserved_by or ""),
                    e.updated_at,
                )
                for e in store.list_events(WF)
            ],
            "runs": [
                (
                    index[r.id],
                    r.status,
                    r.phase,
                    r.prepare_result,
                    r.mutation_result,
                    r.output_state,
                    r.updated_at,
                )
                for r in store.list_runs(workflow=WF)
            ],
            "handlers": store.list_handlers(WF),
            "audit": [
                (a.at, a.actor, a.action, events.get(a.target, a.target), a.detail)
                for a in store.audit_log(workflow=WF)
            ],
            "pending": [e.message_id for e in store.pending_events(WF, "in", limit=4)],
            "wakes": store.consumers_to_wake(),
        }

    @invariant()
    def the_stores_agree(self) -> None:
        assert self.normalized(self.memory, 0) == self.normalized(self.sql, 1)

    def teardown(self) -> None:
        self.sql.close()
        shutil.rmtree(self.directory, ignore_errors=True)


MemoryAgreesWithSqlite.TestCase.settings = settings(
    max_examples=25, stateful_step_count=25, deadline=None
)
# Slow (4 s on an idle machine): 25 sequences of 25 steps, each against a fresh SQLite file.
TestMemoryAgreesWithSqlite = pytest.mark.slow(MemoryAgreesWithSqlite.TestCase)
