"""``keep worker --processes N``: N worker processes on one store, started, watched and
stopped as one worker.

Python runs one thread at a time, so one process computes on one core however many
lanes it has; processes share the store the way separate workers do (leases, presence
rows, fencing tokens), so a run is never in two of them. What `Supervisor` promises:

- Each child is this command again with ``--supervised INDEX``. Its stdin is a pipe that
  only the supervisor holds: when the supervisor ends in any way (SIGKILL included) the
  pipe closes and the child stops as on SIGTERM: it finishes its run and releases its
  leases. No child outlives its supervisor by more than the run it is in.
- SIGTERM or SIGINT is passed on to every child as SIGTERM, and the supervisor waits for
  them all (exit 0). A second signal kills those still running (SIGKILL; exit 1: their
  runs are recovered by the next worker, as after any crash).
- A child that a signal ended (killed, out of memory, a crash of the interpreter) is
  started again after `RESTART_RETRY`'s delay, counted from the first such end since it
  last lived `STEADY_S`. Its leases carry a dead pid of this host, so the others (and
  the new child) take them over at once (`keep_sdk.scheduler` holders).
- A child that exits 0 (``--until-idle`` found nothing due, or someone stopped that one
  process) is not started again. A child that exits with another code has a problem no
  restart mends (a store it can never use, a port it cannot bind): the others are
  stopped and the supervisor exits with that code.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Sequence
from contextlib import suppress
from dataclasses import dataclass, field
from types import FrameType

import click

from keep_sdk.scheduler import RetryPolicy

__all__ = [
    "RESTART_RETRY",
    "STEADY_S",
    "Supervisor",
    "child_arguments",
    "stop_when_stdin_closes",
]

RESTART_RETRY = RetryPolicy(base_s=0.5, cap_s=30.0)
"""Delay before a child that a signal ended is started again: 0.5 s, doubling up to 30 s
while it keeps dying young."""

STEADY_S = 60.0
"""A child that lived this long before it died starts again after the shortest delay."""

_POLL_S = 0.1


@dataclass
class _Slot:
    """One child's place: its process, when it started, and its early deaths in a row."""

    index: int
    process: subprocess.Popen[bytes] | None = None
    started: float = 0.0
    deaths: int = 0
    restart_at: float | None = None


@dataclass
class Supervisor:
    """Run `count` children, `command(index)` being the argv of child `index` (1-based),
    until they have all ended; `run` returns the exit code of the whole."""

    command: Callable[[int], Sequence[str]]
    count: int
    say: Callable[[str], None]
    policy: RetryPolicy = RESTART_RETRY
    _slots: list[_Slot] = field(default_factory=list)
    _signals: int = 0
    _wake: threading.Event = field(default_factory=threading.Event)

    def run(self) -> int:
        """Start every child, restart those a signal ends, pass SIGTERM and SIGINT on;
        the exit code once none is left (see the module's contract)."""
        previous = {
            number: signal.signal(number, self._signalled)
            for number in (signal.SIGTERM, signal.SIGINT)
        }
        try:
            self._slots = [_Slot(index) for index in range(1, self.count + 1)]
            for slot in self._slots:
                self._start(slot)
            return self._watch()
        finally:
            for number, handler in previous.items():
                signal.signal(number, handler)
            self._kill_all()

    def pids(self) -> list[int]:
        """The pids of the children running now."""
        return [
            slot.process.pid
            for slot in self._slots
            if slot.process is not None and slot.process.poll() is None
        ]

    def _signalled(self, _number: int, _frame: FrameType | None) -> None:
        self._signals += 1
        self._wake.set()

    def _start(self, slot: _Slot) -> None:
        argv = list(self.command(slot.index))
        environment = {**os.environ, "PYTHONUNBUFFERED": "1"}
        slot.process = subprocess.Popen(argv, stdin=subprocess.PIPE, env=environment)
        slot.started = time.monotonic()
        slot.restart_at = None

    def _watch(self) -> int:
        handled = 0
        code = 0
        stopping = False
        while True:
            if self._signals > handled:
                handled = self._signals
                if not stopping:
                    stopping = True
                    self._terminate_all()
                elif killed := self._kill_all():
                    self.say(
                        f"killed {killed} worker process{'es' if killed > 1 else ''} that "
                        "had not stopped; the next worker recovers their runs"
                    )
                    code = code or 1
            now = time.monotonic()
            for slot in self._slots:
                ended = self._reap(slot, now, stopping=stopping)
                if ended:
                    code = code or ended
                    if not stopping:
                        stopping = True
                        self._terminate_all()
            if all(slot.process is None and slot.restart_at is None for slot in self._slots):
                return code
            self._wake.wait(_POLL_S)
            self._wake.clear()

    def _reap(self, slot: _Slot, now: float, *, stopping: bool) -> int | None:
        """Look at one slot: start it again when its delay is over, or take in how its
        child ended. The exit code that ends the whole, if this child gave one."""
        if slot.process is None:
            if slot.restart_at is not None:
                if stopping:
                    slot.restart_at = None
                elif now >= slot.restart_at:
                    self._start(slot)
            return None
        code = slot.process.poll()
        if code is None:
            return None
        pid = slot.process.pid
        _close(slot.process)
        slot.process = None
        if code == 0 or (stopping and code < 0):
            return None
        if code > 0:
            then = "" if stopping else "; stopping the others"
            self.say(f"worker process {slot.index} (pid {pid}) exited with code {code}{then}")
            return code
        slot.deaths = 1 if now - slot.started >= STEADY_S else slot.deaths + 1
        delay = self.policy.delay(slot.deaths)
        slot.restart_at = now + delay
        self.say(
            f"worker process {slot.index} (pid {pid}) was ended by {_signal_name(-code)}; "
            f"starting it again in {delay:.1f} s"
        )
        return None

    def _terminate_all(self) -> None:
        for slot in self._slots:
            slot.restart_at = None
            if slot.process is not None and slot.process.poll() is None:
                slot.process.terminate()

    def _kill_all(self) -> int:
        killed = 0
        for slot in self._slots:
            slot.restart_at = None
            if slot.process is not None and slot.process.poll() is None:
                slot.process.kill()
                slot.process.wait()
                killed += 1
        return killed


def _close(process: subprocess.Popen[bytes]) -> None:
    """Close this side of an ended child's stdin pipe."""
    if process.stdin is not None:
        with suppress(OSError):
            process.stdin.close()


def _signal_name(number: int) -> str:
    try:
        return signal.Signals(number).name
    except ValueError:
        return f"signal {number}"


def child_arguments(
    ctx: click.Context, overrides: dict[str, object], *, drop: Sequence[str] = ()
) -> list[str]:
    """The argv that runs `ctx`'s command again as it was given (``python -m keep_sdk``,
    the group's ``--config``, then every option of the command with its value), with
    the values of `overrides` in place of the given ones and the options in `drop` left
    out; an option whose value is None or a flag that is off is not written."""
    argv = [sys.executable, "-m", "keep_sdk"]
    root = ctx.find_root()
    config = root.params.get("config_path")
    if config is not None:
        argv += ["--config", str(config)]
    assert ctx.command.name is not None
    argv.append(ctx.command.name)
    for param in ctx.command.params:
        if not isinstance(param, click.Option) or param.name is None or param.name in drop:
            continue
        value = overrides.get(param.name, ctx.params.get(param.name))
        if param.is_flag:
            if value:
                argv.append(param.opts[0])
            elif param.secondary_opts:
                argv.append(param.secondary_opts[0])
            continue
        if value is not None:
            argv += [param.opts[0], str(value)]
    return argv


def stop_when_stdin_closes(stop: threading.Event) -> None:
    """Set `stop` once this process's stdin reaches its end (its supervisor is gone), from
    a daemon thread."""

    def wait() -> None:
        try:
            while os.read(0, 4096):
                pass
        except OSError:
            pass
        stop.set()

    threading.Thread(target=wait, name="keep-supervised", daemon=True).start()
