"""Process isolation: each phase runs in a worker process that can be killed.

A worker survives nothing: a hang the in-process deadline somehow missed, an
engine crash (SIGSEGV) or a runaway allocation ends with the worker killed or
dead, and the parent returns an outcome. Host calls are relayed to the parent,
which performs them with the runtime's host interface, so the worker holds no
store, connector or credential. Messages travel as length-prefixed frames
(`keep_sdk.sandbox.frames`), read in place in linear time and capped from the
phase's policy; every host result passes the boundary codec before it is sent.
"""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from typing import Any, Final, NoReturn

from pydantic import JsonValue

from keep_sdk.contract import codec
from keep_sdk.errors import InternalError
from keep_sdk.model import SandboxLimits
from keep_sdk.sandbox._failures import outcome_for_host_error
from keep_sdk.sandbox._host import HostInterface
from keep_sdk.sandbox.contexts import CONTEXT_FIELDS, ContextLog, RequestContexts
from keep_sdk.sandbox.frames import (
    DONE_HEAD,
    FrameError,
    FrameReader,
    FrameTimeout,
    model_message,
    write_frame,
)
from keep_sdk.sandbox.outcome import (
    HostCall,
    InternalFailure,
    Limit,
    LimitFailure,
    Outcome,
    PhaseRequest,
    PhaseResult,
    Trace,
)

__all__ = ["MAX_RUNS", "ProcessIsolation", "parse_message"]

_DEFAULT_ADDRESS_SPACE: Final = 2 * 1024 * 1024 * 1024
_READY_TIMEOUT_S: Final = 30.0
_FRAME_SLACK: Final = 64 * 1024 * 1024
MAX_RUNS: Final = 10_000
"""Phases a pooled worker serves before it is replaced. A replacement costs 0.25-0.4 s of CPU
(an interpreter and its imports) and 7-8 ms for each realm it builds again, so at 500 it
was 1.4-2.8 ms of CPU in every consumer run (`benchmarks/RESULTS.md`, 2026-11-28); at
10,000 it is ≈ 0.1 ms. Nothing a phase can reach outlives it in the worker (each phase gets
a fresh module in a frozen realm, and a realm is built again after `REALM_PHASES` phases),
so retiring bounds only what the interpreter's heap accumulates, which `RLIMIT_AS` caps in
any case."""


def frame_cap(limits: SandboxLimits) -> int:
    """The largest frame a worker may send for a phase under `limits`."""
    values = limits.max_value_bytes + limits.max_state_bytes
    return 4 * (values + limits.max_log_bytes + limits.max_trace_bytes) + _FRAME_SLACK


class _WorkerGone(Exception):
    """The worker died, stopped answering in time, or broke the protocol."""

    def __init__(self, outcome: Outcome) -> None:
        super().__init__(getattr(outcome, "message", outcome.kind))
        self.outcome = outcome


class _Worker:
    def __init__(self, address_space_bytes: int) -> None:
        environment = dict(os.environ)
        environment["PYTHONPATH"] = os.pathsep.join(p for p in sys.path if p)
        self.process = subprocess.Popen(
            [sys.executable, "-m", "keep_sdk.sandbox.worker", str(address_space_bytes)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            env=environment,
            close_fds=True,
        )
        assert self.process.stdin is not None
        assert self.process.stdout is not None
        self._stdin = self.process.stdin
        self.reader = FrameReader(self.process.stdout.fileno(), _FRAME_SLACK)
        self.decode_s = 0.0
        self.runs = 0
        self.spared = False
        self.contexts: ContextLog[None] = ContextLog()

    def send(self, message: dict[str, Any] | bytes) -> None:
        data = message if isinstance(message, bytes) else json.dumps(message).encode()
        try:
            write_frame(self._stdin, data)
        except OSError as exc:
            raise _WorkerGone(self._death(f"the sandbox worker stopped reading: {exc}")) from None

    def receive(self, deadline: float, timed_out: Callable[[], Outcome]) -> dict[str, Any]:
        """The next message; `timed_out()` builds the outcome when `deadline` passes."""
        message = self.message(deadline, timed_out)
        if not isinstance(message, dict):
            self._broke()
        return message

    def message(
        self, deadline: float, timed_out: Callable[[], Outcome]
    ) -> PhaseResult | dict[str, Any]:
        """The next message, or the phase result when it is a done message (a frame that
        begins with `DONE_HEAD` is validated from its bytes in one pass); `timed_out()`
        builds the outcome when `deadline` passes."""
        try:
            frame = self.reader.read(deadline)
        except FrameTimeout:
            self.kill()
            raise _WorkerGone(timed_out()) from None
        except FrameError as exc:
            raise _WorkerGone(self._death(f"the sandbox worker failed: {exc}")) from None
        started = time.monotonic()
        try:
            return parse_message(frame)
        except ValueError:
            self._broke()
        finally:
            self.decode_s += time.monotonic() - started

    def _broke(self) -> NoReturn:
        self.kill()
        raise _WorkerGone(InternalFailure(message="the sandbox worker broke the protocol"))

    def _death(self, what: str) -> InternalFailure:
        self.kill()
        code = self.process.returncode
        if code is not None and code < 0:
            what += f" (signal {-code})"
        elif code is not None:
            what += f" (exit status {code})"
        return InternalFailure(message=what)

    def alive(self) -> bool:
        return self.process.poll() is None

    def kill(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
        self.process.wait()
        for stream in (self.process.stdin, self.process.stdout):
            if stream is not None:
                with contextlib.suppress(OSError):
                    stream.close()


class ProcessIsolation:
    """Runs phases in worker processes killed on a wall-clock deadline.

    With `reuse` (the default) a finished worker goes back to a pool and serves the
    next phase (each phase still gets a fresh QuickJS context); a worker that was
    killed, died, failed internally or served `max_runs` phases (`MAX_RUNS`) is replaced. A
    worker four fifths through its `max_runs` gets its replacement started on a
    background thread, so the phase after it retires does not wait for a process
    to start (≈ 0.3 s). With
    ``reuse=False`` every phase gets a new process. `grace_s` is added to the
    phase's wall-clock limit before the kill. The address space of a worker is
    capped at `address_space_bytes` (RLIMIT_AS). `prestart` workers are started at
    once (`InternalError` if they cannot start). Thread-safe; `close` kills the idle
    workers.
    """

    def __init__(
        self,
        *,
        reuse: bool = True,
        max_runs: int = MAX_RUNS,
        grace_s: float = 1.0,
        address_space_bytes: int = _DEFAULT_ADDRESS_SPACE,
        prestart: int = 0,
    ) -> None:
        self.reuse = reuse
        self.max_runs = max_runs
        self.grace_s = grace_s
        self.address_space_bytes = address_space_bytes
        self._idle: list[_Worker] = []
        self._lock = threading.Lock()
        self._spares = threading.Condition(self._lock)
        self._starting = 0
        self._contexts = RequestContexts()
        self._closed = False
        try:
            for _ in range(prestart):
                self._idle.append(self._start())
        except (_WorkerGone, OSError) as exc:
            self.close()
            raise InternalError(f"could not start a sandbox worker: {exc}") from None

    def __enter__(self) -> ProcessIsolation:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def close(self) -> None:
        """Kill every idle worker; runs in progress finish and then kill theirs."""
        with self._lock:
            self._closed = True
            idle, self._idle = self._idle, []
        for worker in idle:
            worker.kill()

    def _start(self) -> _Worker:
        worker = _Worker(self.address_space_bytes)
        message = worker.receive(
            time.monotonic() + _READY_TIMEOUT_S,
            lambda: InternalFailure(
                message=f"the sandbox worker did not start within {_READY_TIMEOUT_S} s"
            ),
        )
        if message.get("type") != "ready":
            worker.kill()
            raise _WorkerGone(InternalFailure(message="the sandbox worker did not start"))
        return worker

    def _take(self) -> _Worker:
        """An idle live worker, a replacement being started (waited for), or a new one."""
        with self._lock:
            while True:
                while self._idle:
                    worker = self._idle.pop()
                    if worker.alive():
                        return worker
                    worker.kill()
                if not self._starting:
                    break
                self._spares.wait(_READY_TIMEOUT_S)
        return self._start()

    def _start_spare(self) -> None:
        """Start one worker on a daemon thread and make it idle (killed if closed meanwhile);
        a worker that does not start is left out: the next `_take` starts one itself."""

        def start() -> None:
            worker: _Worker | None = None
            try:
                worker = self._start()
            except (_WorkerGone, OSError):
                worker = None
            with self._lock:
                self._starting -= 1
                if worker is not None and not self._closed:
                    self._idle.insert(0, worker)
                    worker = None
                self._spares.notify_all()
            if worker is not None:
                worker.kill()

        threading.Thread(target=start, name="keep-sandbox-spare", daemon=True).start()

    def _give_back(self, worker: _Worker, outcome: Outcome) -> None:
        reusable = (
            self.reuse
            and not self._closed
            and worker.runs < self.max_runs
            and not isinstance(outcome, InternalFailure)
            and worker.alive()
        )
        if reusable:
            spare = False
            with self._lock:
                self._idle.append(worker)
                if not worker.spared and worker.runs >= self.max_runs * 4 // 5:
                    worker.spared = spare = True
                    self._starting += 1
            if spare:
                self._start_spare()
        else:
            worker.kill()

    def run(self, request: PhaseRequest, host: HostInterface) -> PhaseResult:
        """Run one phase in a worker; never raises. Host calls run here, in the caller's thread.

        Every host result passes the boundary codec here before it is sent; the trace of a
        worker that died lists its calls without their arguments and results. The phase's
        wall clock starts once a worker is ready: starting one (bounded by its own
        30 s) is not the script's time.
        """
        limits = request.policy.sandbox
        wall = limits.wall_time_s
        calls: list[HostCall] = []
        host_s = [0.0]
        try:
            worker = self._take()
        except _WorkerGone as gone:
            return PhaseResult(outcome=gone.outcome, isolation="process")
        except OSError as exc:
            failure = InternalFailure(message=f"the sandbox worker could not start: {exc}")
            return PhaseResult(outcome=failure, isolation="process")
        started = time.monotonic()
        deadline = started + wall + self.grace_s
        worker.runs += 1
        worker.reader.max_bytes = frame_cap(limits)
        worker.reader.read_s = worker.decode_s = 0.0

        def timed_out() -> LimitFailure:
            elapsed = time.monotonic() - started
            reading = worker.reader.read_s + worker.decode_s
            rest = max(elapsed - host_s[0] - reading, 0.0)
            return LimitFailure(
                limit=Limit.WALL_TIME,
                message=f"the phase ran longer than its wall-clock limit of {wall} s and its "
                f"sandbox worker was killed after {elapsed:.2f} s: ctx calls in the host took "
                f"{host_s[0]:.2f} s, reading the worker's messages {reading:.2f} s, and "
                f"{rest:.2f} s went to the worker (the script and the engine)",
            )

        try:
            self._send_request(worker, request)
            while True:
                message = worker.message(deadline, timed_out)
                if isinstance(message, PhaseResult):
                    self._give_back(worker, message.outcome)
                    return message
                if message.get("type") != "call":
                    raise _WorkerGone(
                        InternalFailure(message="the sandbox worker broke the protocol")
                    )
                called = time.monotonic()
                reply = self._relay(host, message["name"], message.get("arguments"), calls, limits)
                host_s[0] += time.monotonic() - called
                worker.send(reply)
        except _WorkerGone as gone:
            worker.kill()
            trace = Trace(calls=calls, wall_time_s=time.monotonic() - started)
            return PhaseResult(outcome=gone.outcome, trace=trace, isolation="process")

    def _send_request(self, worker: _Worker, request: PhaseRequest) -> None:
        """Send `request`; its context (source, manifest, policy) only if the worker
        does not hold it already."""
        with self._lock:
            key, context = self._contexts.of(request)
        if key in worker.contexts:
            worker.contexts.use(key)
        else:
            worker.send({"type": "context", "key": key, "context": context})
            worker.contexts.put(key, None)
        envelope = {"type": "run", "context": key}
        worker.send(model_message(envelope, "request", request, exclude=CONTEXT_FIELDS))

    @staticmethod
    def _relay(
        host: HostInterface,
        name: str,
        arguments: JsonValue,
        calls: list[HostCall],
        limits: SandboxLimits,
    ) -> bytes:
        started = time.perf_counter()
        try:
            value = host.call(name, arguments)
        except Exception as exc:
            outcome = outcome_for_host_error(exc, name)
            calls.append(
                HostCall(
                    name=name,
                    status="failed",
                    error=getattr(outcome, "message", outcome.kind),
                    duration_s=time.perf_counter() - started,
                )
            )
            return _failed(outcome)
        calls.append(
            HostCall(
                name=name,
                status="ok",
                duration_s=time.perf_counter() - started,
            )
        )
        try:
            text = codec.encode(
                value,
                root="result",
                max_bytes=limits.max_value_bytes,
                max_depth=limits.max_value_depth,
            )
        except codec.BoundaryError as exc:
            message = f"the result of ctx.{name}: {exc.message}"
            if exc.rule == "depth":
                return _failed(LimitFailure(limit=Limit.VALUE_DEPTH, message=message))
            if exc.rule == "size":
                return _failed(LimitFailure(limit=Limit.VALUE_SIZE, message=message))
            return _failed(
                InternalFailure(
                    message=f"ctx.{name} returned a value the sandbox cannot pass to the "
                    f"script: {exc.message}"
                )
            )
        return b'{"type":"result","ok":true,"value":' + text.encode("utf-8") + b"}"


def parse_message(frame: bytes) -> PhaseResult | dict[str, Any]:
    """A worker's message: the phase result of a done message (validated from its bytes
    in one pass when the frame begins with `DONE_HEAD`), else the JSON object. Raises
    `ValueError` (a `ValidationError` among them) for anything else: the worker broke the
    protocol."""
    if frame.startswith(DONE_HEAD):
        return PhaseResult.model_validate_json(frame[len(DONE_HEAD) : -1])
    message = json.loads(frame)
    if not isinstance(message, dict):
        raise ValueError("a worker message is a JSON object")
    if message.get("type") == "done":
        return PhaseResult.model_validate(message.get("result"))
    return message


def _failed(outcome: Outcome) -> bytes:
    return json.dumps(
        {"type": "result", "ok": False, "outcome": outcome.model_dump(mode="json")}
    ).encode()
