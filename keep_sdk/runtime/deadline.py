"""Connector calls with a wall-clock deadline, remembered by idempotency key until they end.

A call that gives no answer in time is an uncertain outcome, and the call is
abandoned, not killed: it may still take effect. `Calls` keeps such a call
until it ends, so the host never issues the same mutation again while the first
attempt is still running in this process, and learns how an abandoned call ended.

Calls run on daemon threads that are kept for the next call once theirs ends
(starting a thread costs 0.1 to 1 ms, a tenth of a whole run). A call never waits
for a thread: when none is idle (every one is still in an abandoned call) a new
one starts, so a call is either running or has not been handed over at all.
"""

from __future__ import annotations

import os
import queue
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, TypeVar

from keep_sdk.errors import TransientError, UncertainOutcome

__all__ = ["Calls", "Ended", "read_within"]

T = TypeVar("T")


@dataclass(eq=False)
class Ended:
    """How an abandoned call ended: its `value`, or the `error` it raised."""

    value: Any = None
    error: BaseException | None = None


@dataclass(eq=False)
class _Call:
    done: threading.Event = field(default_factory=threading.Event)
    ended: Ended = field(default_factory=Ended)


class _Threads:
    """Daemon threads that run one job at a time and wait `idle_s` for the next.

    `start` hands `job` to an idle thread or to a new one at once; a thread that
    waited `idle_s` without a job ends. After a fork the child starts afresh (the
    parent's threads do not exist there).
    """

    def __init__(self, *, idle_s: float = 30.0) -> None:
        self._idle_s = idle_s
        self._lock = threading.Lock()
        self._idle: list[queue.SimpleQueue[Callable[[], None]]] = []
        self._pid = os.getpid()

    def start(self, job: Callable[[], None], name: str) -> None:
        with self._lock:
            if self._pid != os.getpid():
                self._idle, self._pid = [], os.getpid()
            inbox = self._idle.pop() if self._idle else None
        if inbox is None:
            inbox = queue.SimpleQueue()
            threading.Thread(target=self._serve, args=(inbox,), name=name, daemon=True).start()
        inbox.put(job)

    def _serve(self, inbox: queue.SimpleQueue[Callable[[], None]]) -> None:
        while True:
            try:
                job = inbox.get(timeout=self._idle_s)
            except queue.Empty:
                with self._lock:
                    if inbox in self._idle:
                        self._idle.remove(inbox)
                        return
                continue
            job()
            with self._lock:
                self._idle.append(inbox)


class Calls:
    """Runs calls under a deadline and tracks the abandoned ones by key (thread-safe)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._abandoned: dict[str, _Call] = {}
        self._threads = _Threads()

    def call(self, key: str, func: Callable[[], T], *, timeout_s: float, what: str) -> T:
        """Run `func` on a daemon thread; return its result or re-raise what it raised.

        When it has not returned after `timeout_s`, raise `UncertainOutcome` and
        remember the call under `key` until `ended` hands over its outcome.
        """
        call = _Call()

        def target() -> None:
            threading.current_thread().name = f"keep-call {what}"
            try:
                call.ended.value = func()
            except BaseException as exc:
                call.ended.error = exc
            finally:
                call.done.set()

        self._threads.start(target, f"keep-call {what}")
        if not call.done.wait(timeout_s):
            with self._lock:
                self._abandoned[key] = call
            raise UncertainOutcome(
                f"{what} gave no answer within {timeout_s:g}s; it may still take effect"
            )
        if call.ended.error is not None:
            raise call.ended.error
        return call.ended.value  # type: ignore[no-any-return]

    def running(self, key: str) -> bool:
        """Whether a call abandoned under `key` is still running."""
        with self._lock:
            call = self._abandoned.get(key)
        return call is not None and not call.done.is_set()

    def ended(self, key: str) -> Ended | None:
        """How the call abandoned under `key` ended, once; None if none did (or none was)."""
        with self._lock:
            call = self._abandoned.get(key)
            if call is None or not call.done.is_set():
                return None
            del self._abandoned[key]
        return call.ended


_READS = _Threads()


def read_within(func: Callable[[], T], *, timeout_s: float, what: str) -> T:
    """Run the read `func` on a daemon thread; return its result or re-raise what it raised.

    When it has not returned after `timeout_s` (the phase's wall-clock time left), raise
    `TransientError` and abandon it: a read changes nothing, so the run can retry later
    while the abandoned call ends, or never does, on its own.
    """
    if timeout_s <= 0:
        raise TransientError(f"{what} was not started: the phase has no wall-clock time left")
    call = _Call()

    def target() -> None:
        threading.current_thread().name = f"keep-read {what}"
        try:
            call.ended.value = func()
        except BaseException as exc:
            call.ended.error = exc
        finally:
            call.done.set()

    _READS.start(target, f"keep-read {what}")
    if not call.done.wait(timeout_s):
        raise TransientError(
            f"{what} gave no answer within the phase's wall-clock time left ({timeout_s:.1f} s); "
            "the read was abandoned and the run will try again later"
        )
    if call.ended.error is not None:
        raise call.ended.error
    return call.ended.value  # type: ignore[no-any-return]
