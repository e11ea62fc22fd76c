"""A permanent interrupt handler with a wall-clock deadline for a QuickJS context.

The binding's own ``set_time_limit`` is armed only inside eval/call/job and is
disarmed before results and exceptions are converted, and conversion can run
script code with the GIL held. This handler is installed through the engine's C
API once, when the context is created, and stays installed for every path into
the engine, so every one of them is bounded. ``set_time_limit`` must never be
called on a guarded context: the binding would replace the handler.

Layout assumption (``quickjs-ng==0.17.0.2``, CPython with the GIL): the binding's
context object is ``{PyObject_HEAD; JSRuntime *runtime; ...}`` and stores itself
as the runtime opaque. `InterruptGuard` verifies that before installing anything
and fails closed (`InternalError`) when it does not hold.
"""

from __future__ import annotations

import ctypes
import time
from typing import Any, Final

import quickjs

from keep_sdk.errors import InternalError

__all__ = ["CPU_TIME", "WALL_TIME", "InterruptGuard"]

_HANDLER = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p)
_LIBRARY = ctypes.CDLL(quickjs._quickjs.__file__)
_LIBRARY.JS_SetInterruptHandler.argtypes = [ctypes.c_void_p, _HANDLER, ctypes.c_void_p]
_LIBRARY.JS_SetInterruptHandler.restype = None
_LIBRARY.JS_GetRuntimeOpaque.argtypes = [ctypes.c_void_p]
_LIBRARY.JS_GetRuntimeOpaque.restype = ctypes.c_void_p

_RUNTIME_OFFSET: Final = object.__basicsize__


def _always_interrupt(_runtime: int | None, _opaque: int | None) -> int:
    return 1


_ALWAYS_INTERRUPT: Final = _HANDLER(_always_interrupt)

WALL_TIME: Final = "wall_time"
CPU_TIME: Final = "cpu_time"


class InterruptGuard:
    """Interrupts the engine once `time.monotonic()` passes the armed deadline; `fired`
    then holds the reason given to `arm` (`WALL_TIME` or `CPU_TIME`).

    Arm before every entry into the engine; `close` before dropping the context
    replaces the handler with one that interrupts everything.
    """

    __slots__ = ("_at", "_callback", "_reason", "fired", "runtime")

    def __init__(self, context: Any) -> None:
        runtime = ctypes.c_void_p.from_address(id(context) + _RUNTIME_OFFSET).value
        if not runtime or _LIBRARY.JS_GetRuntimeOpaque(runtime) != id(context):
            raise InternalError(
                "the QuickJS binding's memory layout is not the one the sandbox was built "
                "for; pin quickjs-ng==0.17.0.2 on a CPython build with the GIL"
            )
        self.runtime: int = runtime
        """The engine runtime's address."""
        self._at = 0.0
        self._reason = WALL_TIME
        self.fired: str | None = None
        self._callback = _HANDLER(self._poll)
        _LIBRARY.JS_SetInterruptHandler(runtime, self._callback, None)

    def _poll(self, _runtime: int | None, _opaque: int | None) -> int:
        if time.monotonic() >= self._at:
            self.fired = self._reason
            return 1
        return 0

    def arm(self, at: float, reason: str) -> None:
        """Interrupt at `at` (a `time.monotonic` value) for `reason`; clear `fired`."""
        self._at = at
        self._reason = reason
        self.fired = None

    def close(self) -> None:
        """From now on interrupt everything; safe to call twice."""
        self._at = 0.0
        _LIBRARY.JS_SetInterruptHandler(self.runtime, _ALWAYS_INTERRUPT, None)
