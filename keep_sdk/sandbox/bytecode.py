"""Load the prelude from bytecode compiled once per process instead of parsing it per context.

Compiling the prelude costs most of a phase's overhead; QuickJS can serialize a
compiled script (``JS_WriteObject``) and load it into another runtime
(``JS_ReadObject``). The binding exposes neither, so this module calls the
engine's C API through ctypes, on the same layout the interrupt guard verifies
(``{PyObject_HEAD; JSRuntime *; JSContext *}``), checking it again with
``JS_GetRuntime``. Only the prelude, compiled from this package's own source,
is ever serialized. Any mismatch disables the fast path and the prelude is
evaluated from source instead.
"""

from __future__ import annotations

import ctypes
import threading
from typing import Any, Final

import quickjs

__all__ = ["PreludeLoader"]


class _Value(ctypes.Structure):
    _fields_ = [("u", ctypes.c_uint64), ("tag", ctypes.c_int64)]


_TAG_EXCEPTION: Final = 6
_EVAL_GLOBAL_COMPILE_ONLY: Final = 1 << 5
_WRITE_BYTECODE: Final = 1
_READ_BYTECODE: Final = 1
_OFFSET: Final = object.__basicsize__
_GLOBAL_NAME: Final = b"__keepPreludeBoot"

_lib = ctypes.CDLL(quickjs._quickjs.__file__)
_lib.JS_GetRuntime.argtypes = [ctypes.c_void_p]
_lib.JS_GetRuntime.restype = ctypes.c_void_p
_lib.JS_Eval.argtypes = [
    ctypes.c_void_p,
    ctypes.c_char_p,
    ctypes.c_size_t,
    ctypes.c_char_p,
    ctypes.c_int,
]
_lib.JS_Eval.restype = _Value
_lib.JS_WriteObject.argtypes = [
    ctypes.c_void_p,
    ctypes.POINTER(ctypes.c_size_t),
    _Value,
    ctypes.c_int,
]
_lib.JS_WriteObject.restype = ctypes.c_void_p
_lib.JS_ReadObject.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_size_t, ctypes.c_int]
_lib.JS_ReadObject.restype = _Value
_lib.JS_EvalFunction.argtypes = [ctypes.c_void_p, _Value]
_lib.JS_EvalFunction.restype = _Value
_lib.JS_FreeValue.argtypes = [ctypes.c_void_p, _Value]
_lib.JS_FreeValue.restype = None
_lib.JS_GetGlobalObject.argtypes = [ctypes.c_void_p]
_lib.JS_GetGlobalObject.restype = _Value
_lib.JS_SetPropertyStr.argtypes = [ctypes.c_void_p, _Value, ctypes.c_char_p, _Value]
_lib.JS_SetPropertyStr.restype = ctypes.c_int
_lib.js_free.argtypes = [ctypes.c_void_p, ctypes.c_void_p]
_lib.js_free.restype = None


def _js_context(context: Any) -> int | None:
    runtime = ctypes.c_void_p.from_address(id(context) + _OFFSET).value
    js_context = ctypes.c_void_p.from_address(
        id(context) + _OFFSET + ctypes.sizeof(ctypes.c_void_p)
    ).value
    if not runtime or not js_context or _lib.JS_GetRuntime(js_context) != runtime:
        return None
    return js_context


class PreludeLoader:
    """Evaluates the prelude in a context and returns its completion value (``boot``)."""

    def __init__(self, source: str) -> None:
        self._source = source
        self._bytecode: bytes | None = None
        self._compiled = False
        self._lock = threading.Lock()

    def _compile(self) -> bytes | None:
        context = quickjs.Context()
        js_context = _js_context(context)
        if js_context is None:
            return None
        source = self._source.encode()
        function = _lib.JS_Eval(
            js_context, source, len(source), b"<input>", _EVAL_GLOBAL_COMPILE_ONLY
        )
        if function.tag == _TAG_EXCEPTION:
            return None
        size = ctypes.c_size_t(0)
        pointer = _lib.JS_WriteObject(js_context, ctypes.byref(size), function, _WRITE_BYTECODE)
        _lib.JS_FreeValue(js_context, function)
        if not pointer:
            return None
        data = ctypes.string_at(pointer, size.value)
        _lib.js_free(js_context, pointer)
        return data

    def bytecode(self) -> bytes | None:
        """The compiled prelude, or None when the fast path is unavailable."""
        with self._lock:
            if not self._compiled:
                self._bytecode = self._compile()
                self._compiled = True
            return self._bytecode

    def load(self, context: Any, enter: Any) -> Any:
        """``boot`` for `context`; `enter` calls into the engine under the deadline."""
        data = self.bytecode()
        js_context = _js_context(context) if data is not None else None
        if data is None or js_context is None:
            return enter(context.eval, self._source)
        return enter(self._load_bytecode, context, js_context, data)

    @staticmethod
    def _load_bytecode(context: Any, js_context: int, data: bytes) -> Any:
        function = _lib.JS_ReadObject(js_context, data, len(data), _READ_BYTECODE)
        if function.tag == _TAG_EXCEPTION:
            raise RuntimeError("the prelude bytecode could not be read")
        value = _lib.JS_EvalFunction(js_context, function)
        if value.tag == _TAG_EXCEPTION:
            raise RuntimeError("the prelude bytecode failed to run")
        global_object = _lib.JS_GetGlobalObject(js_context)
        status = _lib.JS_SetPropertyStr(js_context, global_object, _GLOBAL_NAME, value)
        _lib.JS_FreeValue(js_context, global_object)
        if status < 0:
            raise RuntimeError("the prelude could not be installed")
        boot = context.get(_GLOBAL_NAME.decode())
        context.eval(f"delete globalThis.{_GLOBAL_NAME.decode()}")
        return boot
