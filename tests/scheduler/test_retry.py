"""The worker's retry policy: transient store errors are retried within bounds, others are not."""

from __future__ import annotations

import random
import sqlite3

import pytest
from hypothesis import given
from hypothesis import strategies as st

from keep_sdk.errors import ConfigurationError, SchemaVersionError, StoreUnavailable
from keep_sdk.scheduler import RetryPolicy, is_transient, retrying


class DriverError(Exception):
    """A stand-in for a driver error carrying PostgreSQL's code, as psycopg's do."""

    def __init__(self, message: str, sqlstate: str | None) -> None:
        super().__init__(message)
        self.sqlstate = sqlstate


class OperationalError(Exception):
    """Named as the drivers name their connection-level errors."""


def _unavailable(reason: str, cause: BaseException) -> StoreUnavailable:
    try:
        raise StoreUnavailable(f"the store could not complete the operation: {reason}") from cause
    except StoreUnavailable as exc:
        return exc


TRANSIENT = [
    OperationalError("connection failed: Connection refused"),
    OperationalError("consuming input failed: server closed the connection unexpectedly"),
    DriverError("the database system is starting up", "57P03"),
    DriverError("terminating connection due to administrator command", "57P01"),
    DriverError("the database system is shutting down", "57P02"),
    DriverError("could not serialize access", "40001"),
    DriverError("deadlock detected", "40P01"),
    DriverError("connection failure", "08006"),
    sqlite3.OperationalError("database is locked"),
    _unavailable("server closed the connection", OperationalError("closed")),
    ConnectionResetError("reset by peer"),
]

PERMANENT = [
    ConfigurationError("store URL 'x' is not a database URL"),
    SchemaVersionError("the store's schema is newer than this keep"),
    DriverError('relation "keep_runs" does not exist', "42P01"),
    DriverError("permission denied for table keep_runs", "42501"),
    OperationalError('connection failed: FATAL: password authentication failed for user "x"'),
    OperationalError('connection failed: FATAL: database "nope" does not exist'),
    _unavailable(
        "password authentication failed", OperationalError("password authentication failed")
    ),
    ValueError("a bug"),
    KeyError("a bug"),
]


@pytest.mark.parametrize("error", TRANSIENT, ids=lambda e: f"{type(e).__name__}:{e}")
def test_errors_that_end_by_themselves_are_transient(error: BaseException) -> None:
    assert is_transient(error)


@pytest.mark.parametrize("error", PERMANENT, ids=lambda e: f"{type(e).__name__}:{e}")
def test_configuration_errors_and_bugs_are_not_transient(error: BaseException) -> None:
    assert not is_transient(error)


policies = st.builds(
    lambda base, factor, attempts: RetryPolicy(base_s=base, cap_s=base * factor, attempts=attempts),
    st.floats(min_value=0.001, max_value=5.0),
    st.floats(min_value=1.0, max_value=1000.0),
    st.integers(min_value=1, max_value=40),
)


@given(policy=policies, data=st.data(), seed=st.integers(0, 2**32 - 1))
def test_transient_failures_shorter_than_the_budget_end_in_success_within_bounds(
    policy: RetryPolicy, data: st.DataObject, seed: int
) -> None:
    assert policy.attempts is not None
    failures = data.draw(
        st.lists(st.sampled_from(TRANSIENT), max_size=policy.attempts - 1), label="failures"
    )
    pending = list(failures)
    slept: list[float] = []

    def call() -> str:
        if pending:
            raise pending.pop(0)
        return "done"

    assert retrying(call, policy, sleep=slept.append, rng=random.Random(seed)) == "done"
    assert len(slept) == len(failures)
    for number, delay in enumerate(slept, start=1):
        assert policy.base_s <= delay <= policy.cap_s
        assert delay <= max(policy.base_s, policy.base_s * 2 ** (number - 1))


@given(policy=policies, error=st.sampled_from(PERMANENT), before=st.integers(0, 3))
def test_a_non_transient_error_is_raised_at_once(
    policy: RetryPolicy, error: BaseException, before: int
) -> None:
    assert policy.attempts is not None
    transient = min(before, policy.attempts - 1)
    pending: list[BaseException] = [TRANSIENT[0]] * transient + [error]
    slept: list[float] = []

    def call() -> str:
        raise pending.pop(0)

    with pytest.raises(type(error)) as raised:
        retrying(call, policy, sleep=slept.append)
    assert raised.value is error
    assert len(slept) == transient, "the non-transient error was retried"


@given(policy=policies, error=st.sampled_from(TRANSIENT))
def test_transient_failures_past_the_budget_are_raised(
    policy: RetryPolicy, error: BaseException
) -> None:
    assert policy.attempts is not None
    slept: list[float] = []

    def call() -> str:
        raise error

    with pytest.raises(type(error)):
        retrying(call, policy, sleep=slept.append)
    assert len(slept) == policy.attempts - 1


def test_a_cap_below_the_base_is_refused() -> None:
    with pytest.raises(ValueError, match="below base_s"):
        RetryPolicy(base_s=2.0, cap_s=1.0)
