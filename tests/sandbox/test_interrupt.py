"""The permanent interrupt handler bounds every path into the engine."""

from __future__ import annotations

import time

import pytest
import quickjs

from keep_sdk.sandbox.interrupt import CPU_TIME, WALL_TIME, InterruptGuard


def _guarded() -> tuple[quickjs.Context, InterruptGuard]:
    context = quickjs.Context()
    return context, InterruptGuard(context)


def test_the_deadline_interrupts_eval_and_names_its_reason() -> None:
    context, guard = _guarded()
    guard.arm(time.monotonic() + 0.1, WALL_TIME)
    started = time.monotonic()
    with pytest.raises(quickjs.JSException, match="interrupted"):
        context.eval("for (;;) {}")
    assert time.monotonic() - started < 0.5
    assert guard.fired == WALL_TIME


def test_arming_again_clears_the_reason() -> None:
    context, guard = _guarded()
    guard.arm(time.monotonic() + 0.05, CPU_TIME)
    with pytest.raises(quickjs.JSException, match="interrupted"):
        context.eval("for (;;) {}")
    assert guard.fired == CPU_TIME
    guard.arm(time.monotonic() + 10, WALL_TIME)
    assert guard.fired is None
    assert context.eval("1 + 2") == 3


def test_it_bounds_exception_conversion_that_runs_script_code() -> None:
    context, guard = _guarded()
    guard.arm(time.monotonic() + 0.2, WALL_TIME)
    started = time.monotonic()
    with pytest.raises(quickjs.JSException):
        context.eval("throw { toString() { for (;;) {} } }")
    assert time.monotonic() - started < 1.0


def test_it_bounds_object_json_with_a_hostile_to_json() -> None:
    context, guard = _guarded()
    guard.arm(time.monotonic() + 10, WALL_TIME)
    value = context.eval("({ toJSON() { for (;;) {} } })")
    guard.arm(time.monotonic() + 0.2, WALL_TIME)
    with pytest.raises(quickjs.JSException):
        value.json()


def test_closing_interrupts_everything_afterwards() -> None:
    context, guard = _guarded()
    guard.arm(time.monotonic() + 10, WALL_TIME)
    assert context.eval("1 + 1") == 2
    guard.close()
    with pytest.raises(quickjs.JSException, match="interrupted"):
        context.eval("for (let i = 0; i < 1e7; i++) {}")
