"""A pooled worker is sent a request's context (source, manifest, policy) once.

The parent and the worker keep the same least-recently-used log of contexts;
whatever order scripts arrive in, every phase runs the script it was given, and
the context travels again only when the worker no longer holds it.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from keep_sdk.sandbox import Completed, ProcessIsolation
from keep_sdk.sandbox.contexts import ContextLog, RequestContexts
from keep_sdk.sandbox.frames import write_frame
from tests.sandbox.helpers import FAST_POLICY, RecordingHost, producer, request

CAPACITY = ContextLog().capacity


class Sent:
    """Counts the context and run messages the parent writes to its workers."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.kinds: list[str] = []
        from keep_sdk.sandbox import process

        def spy(stream: Any, data: bytes) -> None:
            self.kinds.append(json.loads(data).get("type", "?"))
            write_frame(stream, data)

        monkeypatch.setattr(process, "write_frame", spy)


@pytest.fixture
def pool() -> Iterator[ProcessIsolation]:
    with ProcessIsolation(prestart=1) as isolation:
        yield isolation


def script(n: int) -> str:
    return producer(f"return {n};")


def test_the_context_travels_once_per_worker(
    pool: ProcessIsolation, monkeypatch: pytest.MonkeyPatch
) -> None:
    sent = Sent(monkeypatch)
    for _ in range(4):
        result = pool.run(request(script(1)), RecordingHost())
        assert result.outcome == Completed(result=1)
    assert sent.kinds == ["context", "run", "run", "run", "run"]
    pool.run(request(script(2)), RecordingHost())
    assert sent.kinds[-2:] == ["context", "run"]


def test_a_changed_policy_is_a_new_context(
    pool: ProcessIsolation, monkeypatch: pytest.MonkeyPatch
) -> None:
    sent = Sent(monkeypatch)
    pool.run(request(script(1)), RecordingHost())
    limits = FAST_POLICY.sandbox.model_copy(update={"max_host_calls": 7})
    stricter = FAST_POLICY.model_copy(update={"sandbox": limits})
    result = pool.run(request(script(1), policy=stricter), RecordingHost())
    assert result.outcome == Completed(result=1)
    assert sent.kinds == ["context", "run", "context", "run"]


@settings(
    max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(order=st.lists(st.integers(min_value=0, max_value=CAPACITY + 3), min_size=1, max_size=30))
def test_every_phase_runs_its_own_script_whatever_the_order(
    pool: ProcessIsolation, order: list[int]
) -> None:
    for n in order:
        result = pool.run(request(script(n)), RecordingHost())
        assert result.outcome == Completed(result=n)


def test_the_memo_names_equal_content_with_equal_keys() -> None:
    memo = RequestContexts()
    first, _ = memo.of(request(script(1)))
    again, _ = memo.of(request(script(1)))
    other, _ = memo.of(request(script(2)))
    assert first == again
    assert first != other


def test_the_log_evicts_the_least_recently_used() -> None:
    log: ContextLog[int] = ContextLog(capacity=2)
    log.put("a", 1)
    log.put("b", 2)
    assert log.use("a") == 1
    log.put("c", 3)
    assert "b" not in log
    assert ("a" in log, "c" in log) == (True, True)
