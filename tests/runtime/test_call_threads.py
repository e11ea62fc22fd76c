"""Connector calls under a deadline reuse their threads, and never wait for one."""

from __future__ import annotations

import os
import threading
import time

import pytest

from keep_sdk.errors import UncertainOutcome
from keep_sdk.runtime.deadline import Calls


def _wait_until(condition: object, seconds: float = 10.0) -> None:
    deadline = time.monotonic() + seconds
    while not condition():  # type: ignore[operator]
        assert time.monotonic() < deadline, "condition not reached"
        time.sleep(0.005)


def test_calls_in_sequence_run_on_one_kept_thread() -> None:
    calls = Calls()
    seen = []
    for i in range(20):
        assert calls.call(f"k{i}", threading.get_ident, timeout_s=5, what="op") != 0
        seen.append(calls.call(f"j{i}", threading.get_ident, timeout_s=5, what="op"))
        _wait_until(lambda: calls._threads._idle)
    assert len(set(seen)) == 1
    assert seen[0] != threading.get_ident()


def test_a_call_never_waits_behind_an_abandoned_one() -> None:
    calls = Calls()
    release = threading.Event()
    with pytest.raises(UncertainOutcome, match="gave no answer within"):
        calls.call("slow", lambda: release.wait(30), timeout_s=0.05, what="slow op")
    started = time.monotonic()
    assert calls.call("next", lambda: "answered", timeout_s=5, what="op") == "answered"
    assert time.monotonic() - started < 5
    assert calls.running("slow")
    release.set()
    _wait_until(lambda: not calls.running("slow"))
    ended = calls.ended("slow")
    assert ended is not None
    assert ended.value is True
    assert ended.error is None


def test_what_a_call_raises_reaches_the_caller_and_the_thread_stays_usable() -> None:
    calls = Calls()

    def refuse() -> None:
        raise ValueError("refused")

    for _ in range(3):
        with pytest.raises(ValueError, match="refused"):
            calls.call("k", refuse, timeout_s=5, what="op")
    assert calls.call("k", lambda: 7, timeout_s=5, what="op") == 7


def test_idle_threads_end() -> None:
    calls = Calls()
    calls._threads._idle_s = 0.05
    calls.call("k", threading.get_ident, timeout_s=5, what="idle op")
    _wait_until(lambda: "keep-call idle op" not in {t.name for t in threading.enumerate()})
    assert not calls._threads._idle
    assert calls.call("k2", lambda: "again", timeout_s=5, what="idle op") == "again"


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork")
def test_a_forked_child_starts_its_own_threads() -> None:
    calls = Calls()
    calls.call("k", threading.get_ident, timeout_s=5, what="op")
    _wait_until(lambda: calls._threads._idle)
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child reports through the pipe
        try:
            answer = calls.call("c", lambda: "child", timeout_s=5, what="op")
            os.write(write, answer.encode())
        finally:
            os._exit(0)
    os.close(write)
    _, status = os.waitpid(pid, 0)
    assert os.read(read, 100) == b"child"
    os.close(read)
    assert os.waitstatus_to_exitcode(status) == 0
