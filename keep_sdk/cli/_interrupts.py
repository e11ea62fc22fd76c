"""Ctrl-C in the ``keep`` process: never a traceback, never a death by the signal.

`ending` runs the command line and ends the process with its status. While a command
works, the first Ctrl-C raises `KeyboardInterrupt` as usual (a command may catch it or
install its own handler: ``keep worker`` stops cleanly) and the status is 130 when the
interrupt ends the command; a second Ctrl-C ends the process at once with 130. Once the status
is decided, Ctrl-C ends the process at once with that status while the interpreter
joins its threads, and is ignored from its exit handlers on: Python restores the
default handler while it finalises, and a Ctrl-C there would kill the process by the
signal instead of leaving the status the command decided. Python does not always let the
interrupt through as itself: raised in a class body's ``__set_name__`` (while a command
imports a module) it becomes a ``RuntimeError`` with the interrupt as its cause, and raised
in a finaliser it is printed and dropped; both end the command with 130 too. A library that
logs the interrupt it met (with its traceback) is not printed: the command reports it.
"""

from __future__ import annotations

import atexit
import logging
import os
import signal
import sys
from collections.abc import Callable
from contextlib import suppress
from types import FrameType
from typing import NoReturn

__all__ = ["EXIT_INTERRUPTED", "ending"]

EXIT_INTERRUPTED = 130
"""The status of a command that Ctrl-C ended (128 + SIGINT, as shells report it)."""


def _flush() -> None:
    for stream in (sys.stdout, sys.stderr):
        with suppress(OSError, ValueError):
            stream.flush()


class _Interrupts:
    def __init__(self) -> None:
        self.interrupted = False
        self.status: int | None = None

    def handle(self, _signum: int, _frame: FrameType | None) -> None:
        if self.status is not None:
            _flush()
            os._exit(self.status)
        if self.interrupted:
            _flush()
            os._exit(EXIT_INTERRUPTED)
        self.interrupted = True
        raise KeyboardInterrupt


def _status(code: object) -> int:
    if code is None:
        return 0
    return code if isinstance(code, int) else 1


def _ignore_from_now_on() -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)


def _unmark_the_process() -> None:
    """Forget a `KeyboardInterrupt` the interpreter saw leave code run from text.

    CPython marks the process when a `KeyboardInterrupt` leaves code evaluated from a
    string (``exec``/``eval`` of text, as dataclasses and named tuples build their
    methods), even when a caller catches it, and under ``python -m`` ends the process by
    SIGINT at exit whatever its status. Evaluating a string clears the mark.
    """
    eval("None")


def _raised_by_interrupt(exc: BaseException) -> bool:
    """Whether `exc` is a `KeyboardInterrupt` or was raised because of one: Python wraps an
    exception raised in some places (``__set_name__`` in a class body being defined, as
    an import does) in one of its own, with the interrupt as its cause."""
    seen: set[int] = set()
    found: BaseException | None = exc
    while found is not None and id(found) not in seen:
        if isinstance(found, KeyboardInterrupt):
            return True
        seen.add(id(found))
        found = found.__cause__ or found.__context__
    return False


def _interrupt_lost(
    previous: Callable[[sys.UnraisableHookArgs], object],
) -> Callable[[sys.UnraisableHookArgs], object]:
    """An unraisable-exception hook that ends the process with `EXIT_INTERRUPTED` when the
    exception Python could not raise is a Ctrl-C (it came while a finaliser ran, and Python
    would print it and go on as if the key had not been pressed); others go to `previous`."""

    def hook(unraisable: sys.UnraisableHookArgs) -> object:
        if unraisable.exc_value is not None and _raised_by_interrupt(unraisable.exc_value):
            _flush()
            os._exit(EXIT_INTERRUPTED)
        return previous(unraisable)

    return hook


class _CausedByTheInterrupt(logging.Filter):
    """Drops a log record whose exception a Ctrl-C raised: a library that logs what
    interrupted its clean-up (SQLAlchemy's pool closing a connection) would print a
    traceback of the interrupt the command line reports itself."""

    def filter(self, record: logging.LogRecord) -> bool:
        exc = record.exc_info[1] if record.exc_info else None
        return exc is None or not _raised_by_interrupt(exc)


def _quiet_interrupts_in_logs() -> None:
    """Filter the handlers that print a library's log records (the root logger's, and
    Python's last resort when nobody configured logging) with `_CausedByTheInterrupt`."""
    caused = _CausedByTheInterrupt()
    for handler in (logging.lastResort, *logging.getLogger().handlers):
        if handler is not None:
            handler.addFilter(caused)


def ending(command: Callable[[], int]) -> NoReturn:
    """Run `command` and end the process with the status it returns, Ctrl-C as the module says.

    `command` returns the status or raises `SystemExit`; a `KeyboardInterrupt` it lets
    out, or an exception Python raised because of one, ends the process with
    `EXIT_INTERRUPTED`, and so does a Ctrl-C that came while a finaliser ran. Call it only
    as a process's entry point: it changes the SIGINT handler for the rest of the process.
    """
    interrupts = _Interrupts()
    signal.signal(signal.SIGINT, interrupts.handle)
    _quiet_interrupts_in_logs()
    previous_hook = sys.unraisablehook
    sys.unraisablehook = _interrupt_lost(previous_hook)
    ended: SystemExit
    try:
        try:
            ended = SystemExit(command())
        except SystemExit as exc:
            ended = exc
    except BaseException as exc:
        if not _raised_by_interrupt(exc):
            raise
        ended = SystemExit(EXIT_INTERRUPTED)
    finally:
        sys.unraisablehook = previous_hook
    interrupts.status = _status(ended.code)
    _unmark_the_process()
    signal.signal(signal.SIGINT, interrupts.handle)
    atexit.register(_ignore_from_now_on)
    raise ended
