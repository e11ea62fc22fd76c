"""How much C stack the engine may use: never 0, never above a quarter of the real stack.

QuickJS checks its stack limit against the C stack of the thread that runs it; a limit
above what the thread really has (or 0, "unlimited") lets deep recursion overflow the
real stack and crash the process with SIGSEGV.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import resource
import threading
from typing import Final

__all__ = ["safe_stack_bytes", "thread_stack_bytes"]

_FALLBACK: Final = 8 * 1024 * 1024
_MIN_STACK: Final = 16 * 1024
_ATTR_BYTES: Final = 256


def _libc() -> ctypes.CDLL | None:
    name = ctypes.util.find_library("c")
    if name is None:
        return None
    try:
        libc = ctypes.CDLL(name)
        libc.pthread_self.restype = ctypes.c_ulong
        libc.pthread_getattr_np.argtypes = [ctypes.c_ulong, ctypes.c_void_p]
        libc.pthread_attr_getstacksize.argtypes = [ctypes.c_void_p, ctypes.POINTER(ctypes.c_size_t)]
        libc.pthread_attr_destroy.argtypes = [ctypes.c_void_p]
    except (OSError, AttributeError):
        return None
    return libc


_LIBC: Final = _libc()


def _configured_stack_bytes() -> int:
    soft, _ = resource.getrlimit(resource.RLIMIT_STACK)
    default = soft if soft not in (resource.RLIM_INFINITY, 0) else _FALLBACK
    if threading.current_thread() is threading.main_thread():
        return default
    return threading.stack_size() or min(default, _FALLBACK)


_MEASURED = threading.local()


def thread_stack_bytes() -> int:
    """The size of the calling thread's C stack (``pthread_getattr_np`` where available).

    Measured once per thread (on the main thread glibc reads ``/proc/self/maps``).
    """
    size: int | None = getattr(_MEASURED, "size", None)
    if size is None:
        size = _measure()
        _MEASURED.size = size
    return size


def _measure() -> int:
    if _LIBC is not None:
        attr = ctypes.create_string_buffer(_ATTR_BYTES)
        if _LIBC.pthread_getattr_np(_LIBC.pthread_self(), attr) == 0:
            size = ctypes.c_size_t(0)
            status = _LIBC.pthread_attr_getstacksize(attr, ctypes.byref(size))
            _LIBC.pthread_attr_destroy(attr)
            if status == 0 and size.value > 0:
                return size.value
    return _configured_stack_bytes()


def safe_stack_bytes(requested: int) -> int:
    """`requested`, capped at a quarter of the calling thread's real C stack; never 0."""
    return max(_MIN_STACK, min(requested, thread_stack_bytes() // 4))
