"""Each limit of SandboxLimits, exceeded on purpose, ends the phase with that limit."""

from __future__ import annotations

import threading
import time

import pytest
from pydantic import JsonValue

from keep_sdk.model import HostPolicy
from keep_sdk.sandbox import Completed, Limit, LimitFailure
from keep_sdk.sandbox.stack import safe_stack_bytes, thread_stack_bytes
from tests.sandbox.helpers import FAST_LIMITS, FAST_POLICY, RecordingHost, in_phase, producer, run


def _policy(**limits: object) -> HostPolicy:
    return FAST_POLICY.model_copy(update={"sandbox": FAST_LIMITS.model_copy(update=limits)})


def _limit(outcome: object) -> Limit:
    assert isinstance(outcome, LimitFailure), outcome
    return outcome.limit


def test_cpu_time_is_cumulative_across_entries() -> None:
    busy = "const t = Date.now(); while (Date.now() - t < 20) {}"
    source = producer(f"for (let i = 0; i < 40; i++) {{ {busy}; await ctx.gmail.search({{}}); }}")
    result = run(source)
    assert _limit(result.outcome) is Limit.CPU_TIME
    assert 0.3 <= result.trace.cpu_time_s < 0.8
    assert len(result.trace.calls) < 40


def test_wall_time_counts_the_host_calls() -> None:
    def slow(name: str, args: JsonValue) -> JsonValue:
        time.sleep(0.1)
        return None

    started = time.monotonic()
    result = run(producer("for (;;) await ctx.gmail.search({});"), host=RecordingHost(slow))
    assert _limit(result.outcome) is Limit.WALL_TIME
    assert time.monotonic() - started < FAST_LIMITS.wall_time_s + 1.0
    assert result.trace.cpu_time_s < 0.1


def test_jobs_are_counted() -> None:
    result = run(
        producer("for (let i = 0; i < 100; i++) await null;\nreturn 1;"),
        policy=_policy(max_jobs=50),
    )
    assert _limit(result.outcome) is Limit.JOBS
    assert result.trace.jobs == 51


def test_host_calls_are_counted_on_both_sides() -> None:
    host = RecordingHost()
    result = run(
        producer("for (let i = 0; i < 10; i++) await ctx.gmail.search({i});"),
        host=host,
        policy=_policy(max_host_calls=3),
    )
    assert _limit(result.outcome) is Limit.HOST_CALLS
    assert len(host.calls) == 3


@pytest.mark.parametrize("phase", ["producer", "next"])
def test_state_results_use_the_state_limit(phase: str) -> None:
    source = in_phase(phase, "return {data: 'x'.repeat(20000)};")
    assert _limit(run(source, phase).outcome) is Limit.STATE_SIZE
    small = in_phase(phase, "return {data: 'x'.repeat(1000)};")
    assert run(small, phase).outcome.kind == "completed"


def test_prepare_results_use_the_value_limit() -> None:
    fits = in_phase("prepare", "return {data: 'x'.repeat(20000)};")
    assert run(fits, "prepare").outcome.kind == "completed"
    source = in_phase("prepare", "return {data: 'x'.repeat(70000)};")
    assert _limit(run(source, "prepare").outcome) is Limit.VALUE_SIZE


def test_result_nesting_is_limited() -> None:
    source = producer("let v = 1;\nfor (let i = 0; i < 40; i++) v = [v];\nreturn v;")
    assert _limit(run(source).outcome) is Limit.VALUE_DEPTH


def test_host_results_are_limited_in_size_and_nesting() -> None:
    big = RecordingHost(lambda name, args: "x" * 70_000)
    assert (
        _limit(run(producer("await ctx.gmail.search({});"), host=big).outcome) is Limit.VALUE_SIZE
    )
    deep: JsonValue = 1
    for _ in range(40):
        deep = [deep]
    nested = RecordingHost(lambda name, args: deep)
    assert (
        _limit(run(producer("await ctx.gmail.search({});"), host=nested).outcome)
        is Limit.VALUE_DEPTH
    )


def test_memory_limit_is_the_policy_value() -> None:
    source = producer(
        "const a = [];\nfor (let i = 0; i < 200000; i++) a.push({i});\nreturn a.length;"
    )
    assert _limit(run(source).outcome) is Limit.MEMORY
    roomy = _policy(memory_bytes=128 * 1024 * 1024, cpu_time_s=2.0, wall_time_s=4.0)
    assert run(source, policy=roomy).outcome == Completed(result=200000)


def test_stack_limit_bounds_recursion_depth() -> None:
    source = producer(
        "let n = 0;\nfunction f() { n++; f(); }\ntry { f(); } catch (e) {}\nreturn n;"
    )
    shallow = run(source, policy=_policy(stack_bytes=64 * 1024)).outcome
    deep = run(source, policy=_policy(stack_bytes=1024 * 1024)).outcome
    assert isinstance(shallow, Completed)
    assert isinstance(deep, Completed)
    assert isinstance(shallow.result, int)
    assert isinstance(deep.result, int)
    assert 0 < shallow.result < deep.result


def test_stack_is_never_above_a_quarter_of_the_thread_stack() -> None:
    seen: list[int] = []
    go = threading.Event()

    def measure() -> None:
        go.wait()
        seen.append(safe_stack_bytes(4 * 1024 * 1024))

    old = threading.stack_size()
    threading.stack_size(512 * 1024)
    try:
        thread = threading.Thread(target=measure)
        thread.start()
    finally:
        threading.stack_size(old)
    go.set()
    thread.join()
    assert seen == [128 * 1024]
    assert safe_stack_bytes(256 * 1024) == 256 * 1024
    assert thread_stack_bytes() >= 1024 * 1024


def test_a_small_thread_stack_does_not_crash_the_host() -> None:
    results: list[str] = []
    source = producer("function f() { return f() + 1; }\nreturn f();")
    old = threading.stack_size()
    threading.stack_size(256 * 1024)
    try:
        policy = _policy(stack_bytes=4 * 1024 * 1024)
        thread = threading.Thread(
            target=lambda: results.append(run(source, policy=policy).outcome.kind)
        )
        thread.start()
        thread.join()
    finally:
        threading.stack_size(old)
    assert results == ["limit_exceeded"]


@pytest.mark.parametrize(
    "hoard",
    [
        "const kept = []; for (;;) kept.push('x'.repeat(1000) + kept.length);",
        "globalThis.kept = []; for (;;) globalThis.kept.push([kept.length, {}]);",
    ],
)
def test_memory_used_up_by_the_module_body_is_the_memory_limit(hoard: str) -> None:
    source = (
        f"{hoard}\n"
        "export default Keep.workflow({ producers: { h: { handler: async () => 1 } } });\n"
    )
    result = run(source, policy=_policy(cpu_time_s=5.0, wall_time_s=10.0))
    assert _limit(result.outcome) is Limit.MEMORY, result.outcome
