"""Deterministic mode: a fixed clock and a seeded Math.random."""

from __future__ import annotations

import datetime as dt
import time

from pydantic import JsonValue

from keep_sdk.sandbox import Completed, Determinism
from tests.sandbox.helpers import producer, run

CLOCK = dt.datetime(2026, 11, 22, 8, 0, tzinfo=dt.UTC)
CLOCK_MS = 1795334400000


def _result(body: str, determinism: Determinism | None) -> JsonValue:
    outcome = run(producer(body), determinism=determinism).outcome
    assert isinstance(outcome, Completed), outcome
    return outcome.result


def test_the_clock_is_fixed() -> None:
    body = (
        "const a = Date.now();\nfor (let i = 0; i < 100000; i++) {}\n"
        "return [a, Date.now(), new Date().toISOString(), typeof Date(), performance.now(),"
        " new Date(0).getTime(), new Date() instanceof Date];"
    )
    result = _result(body, Determinism(clock=CLOCK))
    assert result == [CLOCK_MS, CLOCK_MS, "2026-11-22T08:00:00.000Z", "string", 0, 0, True]


def test_a_naive_clock_is_utc() -> None:
    assert Determinism(clock=CLOCK.replace(tzinfo=None)).clock_ms == CLOCK_MS


def test_math_random_is_seeded() -> None:
    body = "return Array.from({length: 5}, () => Math.random());"
    first = _result(body, Determinism(clock=CLOCK, seed=7))
    again = _result(body, Determinism(clock=CLOCK, seed=7))
    other = _result(body, Determinism(clock=CLOCK, seed=8))
    assert first == again
    assert first != other
    assert isinstance(first, list)
    assert all(isinstance(x, float) and 0 <= x < 1 for x in first)
    assert len(set(first)) == 5


def test_subclassing_date_still_works_when_fixed() -> None:
    body = (
        "class D extends Date { year() { return this.getUTCFullYear(); } }\nreturn new D().year();"
    )
    assert _result(body, Determinism(clock=CLOCK)) == 2026


def test_without_determinism_the_clock_is_real() -> None:
    result = _result("return Date.now();", None)
    assert isinstance(result, int | float)
    assert abs(result / 1000 - time.time()) < 5
