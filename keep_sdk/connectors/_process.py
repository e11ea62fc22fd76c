"""Running an operator's program with a bounded appetite: bytes capped while reading, one deadline.

`run_bounded` starts the program in its own session with exactly the environment
it is given (no shell), writes the request on stdin, and reads stdout and
stderr on two threads. Reading stops and the whole process group is killed as
soon as stdout passes `max_stdout_bytes` or the deadline passes; only the last
`stderr_tail_bytes` of stderr are kept. Memory therefore never grows past the
caps, whatever the program prints.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import IO

__all__ = ["Finished", "run_bounded"]

_CHUNK = 64 * 1024


@dataclass(frozen=True)
class Finished:
    """How a bounded run ended.

    `returncode` is None when the program was killed (`timed_out` or
    `overflowed`). `stdout` holds at most the cap; `stderr_tail` the last bytes.
    """

    returncode: int | None
    stdout: bytes
    stderr_tail: bytes
    timed_out: bool = False
    overflowed: bool = False


class _Reader:
    def __init__(self, stream: IO[bytes], *, cap: int, keep_tail: bool) -> None:
        self.stream = stream
        self.cap = cap
        self.keep_tail = keep_tail
        self.data = bytearray()
        self.overflowed = False
        self.thread = threading.Thread(target=self._read, daemon=True)
        self.thread.start()

    def _read(self) -> None:
        try:
            while chunk := self.stream.read1(_CHUNK):  # type: ignore[attr-defined]
                self.data += chunk
                if len(self.data) > self.cap:
                    if not self.keep_tail:
                        self.overflowed = True
                        del self.data[self.cap :]
                        return
                    del self.data[: len(self.data) - self.cap]
        except (OSError, ValueError):
            return


def _kill(process: subprocess.Popen[bytes]) -> None:
    try:
        os.killpg(process.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        process.kill()


def run_bounded(
    argv: Sequence[str],
    *,
    stdin: bytes,
    env: Mapping[str, str],
    timeout_s: float,
    max_stdout_bytes: int,
    stderr_tail_bytes: int = 4096,
) -> Finished:
    """Run `argv` (argv[0] an absolute path) under the caps in the module docstring.

    Raises ``OSError`` when the program cannot be started.
    """
    deadline = time.monotonic() + timeout_s
    process = subprocess.Popen(
        list(argv),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=dict(env),
        shell=False,
        start_new_session=True,
        close_fds=True,
    )
    assert process.stdin is not None
    assert process.stdout is not None
    assert process.stderr is not None
    out = _Reader(process.stdout, cap=max_stdout_bytes, keep_tail=False)
    err = _Reader(process.stderr, cap=stderr_tail_bytes, keep_tail=True)
    writer = threading.Thread(target=_feed, args=(process.stdin, stdin), daemon=True)
    writer.start()
    timed_out = False
    while True:
        out.thread.join(min(0.05, max(0.0, deadline - time.monotonic())))
        if out.overflowed:
            _kill(process)
            break
        if not out.thread.is_alive() and process.poll() is not None:
            break
        if time.monotonic() >= deadline:
            timed_out = True
            _kill(process)
            break
    try:
        returncode: int | None = process.wait(timeout=max(0.1, deadline - time.monotonic()))
    except subprocess.TimeoutExpired:
        timed_out = True
        _kill(process)
        process.wait()
    if timed_out or out.overflowed:
        returncode = None
    err.thread.join(0.5)
    for stream in (process.stdout, process.stderr):
        stream.close()
    return Finished(
        returncode=returncode,
        stdout=bytes(out.data),
        stderr_tail=bytes(err.data),
        timed_out=timed_out,
        overflowed=out.overflowed,
    )


def _feed(stream: IO[bytes], data: bytes) -> None:
    with contextlib.suppress(OSError, ValueError):
        stream.write(data)
    with contextlib.suppress(OSError):
        stream.close()
