"""Process isolation: worker processes relay host calls and are killed on deadlines or crashes."""

from __future__ import annotations

import os
import signal
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from pydantic import JsonValue

from keep_sdk.errors import InternalError, TransientError
from keep_sdk.model import FailureKind, HostPolicy
from keep_sdk.sandbox import (
    CallFailed,
    Completed,
    InternalFailure,
    Limit,
    LimitFailure,
    ProcessIsolation,
)
from keep_sdk.sandbox.process import MAX_RUNS
from tests.sandbox.helpers import (
    FAST_LIMITS,
    RecordingHost,
    check_outcome,
    producer,
    request,
    script_headers,
)


def _children() -> set[int]:
    pids: set[int] = set()
    for task in Path(f"/proc/{os.getpid()}/task").iterdir():
        text = (task / "children").read_text().split()
        pids.update(int(pid) for pid in text)
    return pids


@pytest.fixture(scope="module")
def pool() -> Iterator[ProcessIsolation]:
    with ProcessIsolation(prestart=1) as isolation:
        yield isolation


def test_a_phase_runs_in_a_worker_and_relays_host_calls(pool: ProcessIsolation) -> None:
    host = RecordingHost(lambda name, args: {"pid": os.getpid(), "args": args})
    result = pool.run(
        request(producer("const r = await ctx.gmail.search({q: 1});\nreturn r;")), host
    )
    assert result.isolation == "process"
    assert result.outcome == Completed(result={"pid": os.getpid(), "args": {"q": 1}})
    assert host.calls == [("gmail.search", {"q": 1})]
    assert [c.status for c in result.trace.calls] == ["ok"]


def test_host_errors_are_classified_in_the_parent(pool: ProcessIsolation) -> None:
    def fail(name: str, args: JsonValue) -> JsonValue:
        raise TransientError("busy", retry_after=2.0)

    result = pool.run(request(producer("await ctx.gmail.search({});")), RecordingHost(fail))
    assert isinstance(result.outcome, CallFailed)
    assert result.outcome.failure is FailureKind.TRANSIENT
    assert result.outcome.retry_after == 2.0
    assert result.outcome.line == 3


def test_a_worker_is_reused_after_a_clean_run(pool: ProcessIsolation) -> None:
    seen: list[set[int]] = []

    def spy(name: str, args: JsonValue) -> JsonValue:
        seen.append(_children())
        return None

    for _ in range(2):
        pool.run(request(producer("await ctx.gmail.search({});")), RecordingHost(spy))
    assert seen[0] == seen[1]


def test_reuse_false_starts_a_process_per_run() -> None:
    seen: list[set[int]] = []

    def spy(name: str, args: JsonValue) -> JsonValue:
        seen.append(_children())
        return None

    with ProcessIsolation(reuse=False) as isolation:
        for _ in range(2):
            isolation.run(request(producer("await ctx.gmail.search({});")), RecordingHost(spy))
    assert seen[0] != seen[1]


def test_starting_a_worker_is_not_counted_in_the_phases_wall_time(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A worker that takes longer to start than the phase's wall-clock limit and its grace
    together still gives the phase the whole limit: the clock starts once it is ready."""
    (tmp_path / "sitecustomize.py").write_text("import time\ntime.sleep(2.0)\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    limits = FAST_LIMITS.model_copy(update={"wall_time_s": 0.5})
    policy = HostPolicy(sandbox=limits)
    with ProcessIsolation(grace_s=0.5) as isolation:
        started = time.monotonic()
        result = isolation.run(request(producer("return 1;"), policy=policy), RecordingHost())
        elapsed = time.monotonic() - started
    assert result.outcome == Completed(result=1)
    assert elapsed >= 2.0
    assert result.trace.wall_time_s < limits.wall_time_s


def _signal_worker(sig: int) -> RecordingHost:
    before = _children()

    def send(name: str, args: JsonValue) -> JsonValue:
        for pid in _children() - before:
            os.kill(pid, sig)
        return None

    return RecordingHost(send)


def test_a_worker_that_stops_answering_is_killed_at_the_deadline() -> None:
    with ProcessIsolation(grace_s=0.5) as isolation:
        host = _signal_worker(signal.SIGSTOP)
        isolation.run(request(producer("return 0;")), RecordingHost())
        started = time.monotonic()
        result = isolation.run(request(producer("await ctx.gmail.search({});")), host)
        elapsed = time.monotonic() - started
        assert isinstance(result.outcome, LimitFailure)
        assert result.outcome.limit is Limit.WALL_TIME
        assert "killed" in result.outcome.message
        assert FAST_LIMITS.wall_time_s <= elapsed < FAST_LIMITS.wall_time_s + 1.5
        assert [c.name for c in result.trace.calls] == ["gmail.search"]
        after = isolation.run(request(producer("return 1;")), RecordingHost())
        assert after.outcome == Completed(result=1)


def test_an_engine_crash_is_survived() -> None:
    with ProcessIsolation() as isolation:
        result = isolation.run(
            request(producer("await ctx.gmail.search({});")), _signal_worker(signal.SIGSEGV)
        )
        assert isinstance(result.outcome, InternalFailure)
        assert "signal 11" in result.outcome.message
        after = isolation.run(request(producer("return 2;")), RecordingHost())
        assert after.outcome == Completed(result=2)


@pytest.mark.parametrize(
    "name",
    [
        "array_bomb",
        "call_storm_sequential",
        "hostile_toJSON_argument_loop",
        "loop_plain",
        "mutation_catch_terminal",
        "mutation_then_spin",
        "promise_species",
        "recursion_catch_and_recurse",
        "regex_nested_quantifier",
        "throw_hostile_name",
    ],
)
def test_adversarial_scripts_end_the_same_in_a_worker(pool: ProcessIsolation, name: str) -> None:
    path = Path(__file__).parent / "adversarial" / f"{name}.js"
    headers = script_headers(path)
    started = time.monotonic()
    result = pool.run(request(path.read_text("utf-8"), headers["phase"]), RecordingHost())
    assert time.monotonic() - started < FAST_LIMITS.wall_time_s + 1.0
    check_outcome(result, headers["expect"])


def test_close_kills_idle_workers() -> None:
    before = _children()
    isolation = ProcessIsolation(prestart=1)
    started = _children() - before
    assert len(started) == 1
    isolation.close()
    assert not (_children() & started)


def test_a_worker_that_cannot_start_is_an_outcome_not_an_exception(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr("keep_sdk.sandbox.process.sys.executable", "/nonexistent/python")
    with ProcessIsolation() as isolation:
        result = isolation.run(request(producer("return 1;")), RecordingHost())
    assert isinstance(result.outcome, InternalFailure)
    assert "could not start" in result.outcome.message


def test_prestart_failure_raises_a_keep_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("keep_sdk.sandbox.process.sys.executable", "/nonexistent/python")
    with pytest.raises(InternalError, match="could not start a sandbox worker"):
        ProcessIsolation(prestart=1)


def test_the_address_space_cap_bounds_a_worker_beyond_the_policy() -> None:
    roomy = FAST_LIMITS.model_copy(
        update={"memory_bytes": 4 * 1024**3, "cpu_time_s": 30.0, "wall_time_s": 40.0}
    )
    policy = request("").policy.model_copy(update={"sandbox": roomy})
    source = producer(
        "const a = [];\nfor (;;) { a.push(new Uint8Array(1 << 24)); console.log(a.length); }"
    )
    with ProcessIsolation(address_space_bytes=768 * 1024 * 1024) as isolation:
        result = isolation.run(request(source, policy=policy), RecordingHost())
        assert result.outcome.kind in ("limit_exceeded", "internal_error"), result.outcome
        if isinstance(result.outcome, LimitFailure):
            assert result.outcome.limit is Limit.MEMORY
        held = max((int(line.text) for line in result.trace.console), default=0)
        assert held * (1 << 24) < 768 * 1024 * 1024
        after = isolation.run(request(producer("return 3;")), RecordingHost())
        assert after.outcome == Completed(result=3)


def _rss_kib(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    raise AssertionError(f"no VmRSS for {pid}")


@pytest.mark.slow
def test_a_long_lived_worker_keeps_its_memory_flat() -> None:
    """A worker lives `MAX_RUNS` phases by default: what its phases leave behind must not
    grow with them (realms are rebuilt after `REALM_PHASES`, caches are bounded)."""
    rss: list[int] = []
    with ProcessIsolation(prestart=1) as isolation:
        assert isolation.max_runs == MAX_RUNS > 2500
        pid = isolation._idle[0].process.pid
        for i in range(1, 2501):
            body = (
                f"const xs = []; for (let j = 0; j < 50; j++) xs.push({{j, s: 'v{i % 4}'}});\n"
                f"await ctx.gmail.search({{}});\nreturn xs.length + {i % 4};"
            )
            result = isolation.run(request(producer(body)), RecordingHost())
            assert result.outcome == Completed(result=50 + i % 4)
            if i in (800, 2500):
                rss.append(_rss_kib(pid))
    assert rss[1] - rss[0] < 2048, rss


def test_a_retiring_worker_is_replaced_before_it_retires(monkeypatch: pytest.MonkeyPatch) -> None:
    starts: list[str] = []
    start = ProcessIsolation._start

    def recorded(self: ProcessIsolation) -> object:
        starts.append(threading.current_thread().name)
        return start(self)

    monkeypatch.setattr(ProcessIsolation, "_start", recorded)
    before = _children()
    with ProcessIsolation(prestart=1, max_runs=5) as isolation:
        for _ in range(17):
            result = isolation.run(
                request(producer("await ctx.gmail.search({});\nreturn 1;")), RecordingHost()
            )
            assert result.outcome == Completed(result=1)
            time.sleep(0.02)
            deadline = time.monotonic() + 30
            while isolation._starting and time.monotonic() < deadline:
                time.sleep(0.01)
        assert starts[0] == threading.current_thread().name
        assert starts[1:] == ["keep-sandbox-spare"] * 3
        assert len(_children() - before) <= 2
    assert not (_children() - before)
