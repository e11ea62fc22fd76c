"""A database error at any SQL statement of a run is transient: nothing lost, nothing twice.

The SQL store is failed from below (SQLAlchemy engine events, `StatementFaults`) at
every statement and every commit of a consumer run and of a producer run, in turn:
the statement fails with the driver's own error, or a commit lands and its answer
is lost. Whatever escapes is `StoreUnavailable`; a run is never ``failed:internal``;
after the scheduler settles, the row exists exactly once, the event is consumed,
its follow-up event published once, and no run or ledger entry is left unfinished.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator
from pathlib import Path

import pytest

from keep_sdk.conformance.postgres import PostgresServer
from keep_sdk.errors import StoreUnavailable
from keep_sdk.model import EventStatus, HandlerKind, LedgerStatus, RunStatus
from keep_sdk.scheduler import Scheduler
from keep_sdk.stores import SqlStore
from tests.runtime.harness import Env, make_env
from tests.stores.statement_faults import Mode, StatementFaults

WORKFLOW = "mail-to-sheet"
SETTLED = {RunStatus.COMMITTED, RunStatus.CRASHED}


def _env(tmp_path: Path, name: str) -> tuple[Env, StatementFaults]:
    env = make_env(f"sqlite:///{tmp_path / name}.db")
    assert isinstance(env.store, SqlStore)
    return env, StatementFaults(env.store.engine)


def settle(env: Env) -> None:
    """Run the scheduler (as a restarted worker would) until nothing is due or waiting."""
    scheduler = Scheduler(env.runtime, worker="settler", clock=env.clock)
    for _ in range(30):
        scheduler.run_until_idle(max_steps=200)
        unfinished = [r for r in env.store.list_runs() if r.status not in SETTLED]
        if not unfinished and not env.store.active_runs():
            return
        env.clock.advance(3600)
    pytest.fail(f"runs never settled: {[(r.id, r.status.value, r.error) for r in unfinished]}")


def check_consumer_invariants(env: Env) -> None:
    """Every email event consumed, its row written once and its follow-up published once
    (the scheduler also runs the producer, which publishes more emails)."""
    emails = env.store.list_events(WORKFLOW, topic="email.received")
    assert "m1" in {e.message_id for e in emails}
    assert {e.status for e in emails} == {EventStatus.CONSUMED}
    expected = sorted([e.payload["from"], e.payload["subject"]] for e in emails)  # type: ignore[index]
    assert sorted(env.rows()) == expected, "each mutation must take effect exactly once"
    follow_ups = env.store.list_events(WORKFLOW, topic="row.created")
    assert sorted(e.message_id for e in follow_ups) == sorted(f"row:{e.message_id}" for e in emails)
    runs = env.store.list_runs(workflow=WORKFLOW)
    assert {r.status for r in runs} <= SETTLED, [(r.status, r.error) for r in runs]
    ledger = env.store.list_ledger(workflow=WORKFLOW)
    assert [e.status for e in ledger if e.status is not LedgerStatus.FAILED] == [
        LedgerStatus.APPLIED
    ] * len(emails)
    handler = env.store.get_handler(WORKFLOW, "appendRow")
    assert handler.state == {"count": len(emails), "last": "applied"}


def _consumer_positions(tmp_path: Path) -> list[str]:
    env, faults = _env(tmp_path, "count-consumer")
    env.publish("m1")
    faults.arm(10**9)
    run = env.runtime.run_consumer(WORKFLOW, "appendRow")
    positions = list(faults.positions)
    assert run.status is RunStatus.COMMITTED
    env.store.close()
    return positions


@pytest.fixture(scope="module")
def consumer_positions(tmp_path_factory: pytest.TempPathFactory) -> list[str]:
    return _consumer_positions(tmp_path_factory.mktemp("count"))


def _cases(positions: list[str]) -> Iterator[tuple[int, Mode]]:
    for index, what in enumerate(positions, start=1):
        yield index, "raise"
        if what == "COMMIT":
            yield index, "lost-ack"


@pytest.mark.slow
def test_a_consumer_run_survives_a_store_failure_at_every_statement_and_commit(
    consumer_positions: list[str], tmp_path: Path
) -> None:
    assert consumer_positions.count("COMMIT") >= 3, consumer_positions  # reads + 2 checkpoints
    escaped = 0
    messages: list[str] = []
    for index, mode in _cases(consumer_positions):
        env, faults = _env(tmp_path, f"c{index}{mode}")
        env.publish("m1")
        faults.arm(index, mode)
        try:
            run = env.runtime.run_consumer(WORKFLOW, "appendRow")
        except StoreUnavailable as exc:
            escaped += 1
            messages.append(str(exc))
        else:
            assert run.status is not RunStatus.FAILED_INTERNAL, (index, mode, run.error)
        assert faults.fired, f"position {index} ({mode}) was never reached"
        faults.disarm()
        settle(env)
        try:
            check_consumer_invariants(env)
        except AssertionError as exc:
            raise AssertionError(f"fault at {index} {faults.fired} ({mode}): {exc}") from exc
        assert all(r.status is not RunStatus.FAILED_INTERNAL for r in env.store.list_runs())
        env.store.close()
    assert 0 < escaped < len(list(_cases(consumer_positions)))
    assert all("could not complete the operation" in m for m in messages)


def test_a_store_failure_inside_a_phase_pauses_the_run_for_a_backoff(tmp_path: Path) -> None:
    env, faults = _env(tmp_path, "peek")
    env.publish("m1")
    faults.arm(10**9)
    env.runtime.run_consumer(WORKFLOW, "appendRow")
    peek = next(
        i
        for i, what in enumerate(faults.positions, start=1)
        if what.startswith("SELECT") and "keep_events" in what and i > 3
    )
    env.store.close()
    env, faults = _env(tmp_path, "peek-again")
    env.publish("m1")
    faults.arm(peek)
    run = env.runtime.run_consumer(WORKFLOW, "appendRow")
    assert run.status is RunStatus.PAUSED_TRANSIENT, run.error
    assert run.failure is not None
    assert run.failure.value == "transient"
    assert run.resume_at is not None
    assert run.resume_at > env.clock()
    assert "disk I/O error" in (run.error or "")
    assert env.statuses() == {"m1": EventStatus.PENDING}
    faults.disarm()
    settle(env)
    check_consumer_invariants(env)


def test_a_store_failure_after_the_mutation_is_reconciled_not_reissued(tmp_path: Path) -> None:
    env, faults = _env(tmp_path, "applied")
    env.publish("m1")
    faults.arm(10**9)
    env.runtime.run_consumer(WORKFLOW, "appendRow")
    applied = next(
        i
        for i, what in enumerate(faults.positions, start=1)
        if what.startswith("UPDATE keep_ledger")
        and faults.positions.index(what) + 1 == i
        and i > faults.positions.index("COMMIT")
    )
    env.store.close()
    for position in range(applied, applied + 3):
        env, faults = _env(tmp_path, f"applied-{position}")
        env.publish("m1")
        faults.arm(position)
        run = env.runtime.run_consumer(WORKFLOW, "appendRow")
        entry = env.store.ledger_entry_for_run(run.id)
        assert entry is not None
        if run.status is RunStatus.PAUSED_RECONCILIATION:
            assert entry.status is LedgerStatus.NEEDS_RECONCILE
            assert "the store failed while the mutation was in flight" in (run.error or "")
        faults.disarm()
        settle(env)
        check_consumer_invariants(env)
        env.store.close()


@pytest.mark.slow
def test_a_producer_run_survives_a_store_failure_at_every_statement_and_commit(
    tmp_path: Path,
) -> None:
    env, faults = _env(tmp_path, "count-producer")
    faults.arm(10**9)
    assert env.runtime.run_producer(WORKFLOW, "pollEmail").status is RunStatus.COMMITTED
    positions = list(faults.positions)
    env.store.close()
    for index, mode in _cases(positions):
        env, faults = _env(tmp_path, f"p{index}{mode}")
        faults.arm(index, mode)
        try:
            run = env.runtime.run_producer(WORKFLOW, "pollEmail")
        except StoreUnavailable:
            pass
        else:
            assert run.status is not RunStatus.FAILED_INTERNAL, (index, mode, run.error)
        faults.disarm()
        env.clock.advance(3600)
        settle(env)
        events = env.store.list_events(WORKFLOW, topic="email.received")
        assert sorted(e.message_id for e in events) == ["m1", "m2", "m3"], (index, mode)
        producers = [r for r in env.store.list_runs() if r.kind is HandlerKind.PRODUCER]
        assert any(r.status is RunStatus.COMMITTED for r in producers)
        assert all(r.status in SETTLED for r in producers), (index, mode)
        state = env.store.get_handler(WORKFLOW, "pollEmail").state
        assert state == {"cursor": "2026-11-20T03:00:00Z"}
        env.store.close()


def test_store_unavailable_names_the_reason_and_what_to_do(tmp_path: Path) -> None:
    env, faults = _env(tmp_path, "message")
    env.publish("m1")
    faults.arm(1)
    with pytest.raises(StoreUnavailable) as caught:
        env.runtime.run_consumer(WORKFLOW, "appendRow")
    assert caught.value.reason == "disk I/O error"
    assert "check the disk and free space" in str(caught.value)
    assert env.clock() == dt.datetime(2026, 11, 22, 9, 0, tzinfo=dt.UTC)


@pytest.mark.postgres
@pytest.mark.slow
def test_a_terminated_postgres_backend_at_every_statement_loses_and_repeats_nothing(
    postgres_server: PostgresServer,
) -> None:
    url = postgres_server.create_database("terminate")

    def env_at(name: str) -> tuple[Env, StatementFaults]:
        import psycopg

        with psycopg.connect(url, autocommit=True) as admin:
            tables = admin.execute(
                "SELECT string_agg(quote_ident(tablename), ', ') FROM pg_tables "
                "WHERE schemaname = 'public' AND tablename LIKE 'keep\\_%' "
                "AND tablename <> 'keep_schema'"
            ).fetchone()
            if tables and tables[0]:
                admin.execute(f"TRUNCATE {tables[0]} CASCADE")
        env = make_env(url)
        assert isinstance(env.store, SqlStore)
        return env, StatementFaults(env.store.engine, admin_url=postgres_server.admin_url)

    env, faults = env_at("count")
    env.publish("m1")
    faults.arm(10**9)
    env.runtime.run_consumer(WORKFLOW, "appendRow")
    statements = [i for i, what in enumerate(faults.positions, start=1) if what != "COMMIT"]
    env.store.close()
    terminated = 0
    reasons: list[str] = []
    for index in statements:
        env, faults = env_at(f"kill{index}")
        env.publish("m1")
        faults.arm(index, "terminate")
        try:
            run = env.runtime.run_consumer(WORKFLOW, "appendRow")
        except StoreUnavailable as exc:
            terminated += 1
            reasons.append(exc.reason)
        else:
            assert run.status is not RunStatus.FAILED_INTERNAL, (index, run.error)
            terminated += run.status is not RunStatus.COMMITTED
        faults.disarm()
        settle(env)
        try:
            check_consumer_invariants(env)
        except AssertionError as exc:
            raise AssertionError(f"backend terminated at {index} {faults.fired}: {exc}") from exc
        env.store.close()
    assert terminated >= len(statements) // 2, "terminating the backend must reach the store"
    assert all("terminat" in r or "closed" in r for r in reasons), reasons


@pytest.mark.parametrize(
    ("reason", "advice"),
    [
        ("attempt to write a readonly database", "read-only; make them writable"),
        ("database or disk is full", "the disk is full; free space"),
        ("database is locked", "another program holds the database lock"),
    ],
)
def test_a_store_that_cannot_write_pauses_the_run_and_says_what_to_fix(
    tmp_path: Path, reason: str, advice: str
) -> None:
    env, faults = _env(tmp_path, "cannot-write")
    env.publish("m1")
    faults.arm(10**9)
    env.runtime.run_consumer(WORKFLOW, "appendRow")
    reserve = next(
        i
        for i, what in enumerate(faults.positions, start=1)
        if what.startswith("UPDATE keep_events")
    )
    env.store.close()
    env, faults = _env(tmp_path, "cannot-write-again")
    env.publish("m1")
    faults.arm(reserve, message=reason)
    run = env.runtime.run_consumer(WORKFLOW, "appendRow")
    assert run.status is RunStatus.PAUSED_TRANSIENT
    assert reason in (run.error or "")
    assert advice in (run.error or "")
    assert env.rows() == []
    faults.disarm()
    settle(env)
    check_consumer_invariants(env)
