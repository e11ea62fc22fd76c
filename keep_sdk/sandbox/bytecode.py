"""Load the prelude and workflow modules from bytecode the host compiled itself.

Parsing and compiling cost much of a phase's overhead; QuickJS can serialize a
compiled script or module (``JS_WriteObject``) and load it into another runtime
(``JS_ReadObject``). The binding exposes neither, so this module calls the
engine's C API through ctypes, on the same layout the interrupt guard verifies
(``{PyObject_HEAD; JSRuntime *; JSContext *}``), checking it again with
``JS_GetRuntime``. Only text compiled in this process is ever serialized: the
prelude, from this package's own source, once per process; a workflow module,
from its (marked) source text, once per text and limits, in a throwaway context
that runs none of it. Bytecode never comes from anywhere else (QuickJS does not
verify bytecode). The prelude's bytecode omits function source text; a module's
keeps it, so its functions' ``toString`` reads as when it is evaluated from source.
Any mismatch or failure disables the fast path and the text is evaluated from
source instead, which reports its errors as before.
"""

from __future__ import annotations

import ctypes
import threading
from collections import OrderedDict
from typing import Any, Final

import quickjs

__all__ = ["MODULE_CAPACITY", "ModuleLoader", "PreludeLoader"]

MODULE_CAPACITY: Final = 32
"""Compiled workflow modules kept per process (least recently used evicted first)."""


class _Value(ctypes.Structure):
    _fields_ = [("u", ctypes.c_uint64), ("tag", ctypes.c_int64)]


_TAG_EXCEPTION: Final = 6
_EVAL_GLOBAL_COMPILE_ONLY: Final = 1 << 5
_EVAL_MODULE_COMPILE_ONLY: Final = 1 | 1 << 5
_WRITE_BYTECODE: Final = 1
_WRITE_STRIP_SOURCE: Final = 1 << 4
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
_lib.JS_GetException.argtypes = [ctypes.c_void_p]
_lib.JS_GetException.restype = _Value
_lib.JS_DefinePropertyValueStr.argtypes = [
    ctypes.c_void_p,
    _Value,
    ctypes.c_char_p,
    _Value,
    ctypes.c_int,
]
_lib.JS_DefinePropertyValueStr.restype = ctypes.c_int

_lib.JS_NewAtom.argtypes = [ctypes.c_void_p, ctypes.c_char_p]
_lib.JS_NewAtom.restype = ctypes.c_uint32
_lib.JS_FreeAtom.argtypes = [ctypes.c_void_p, ctypes.c_uint32]
_lib.JS_FreeAtom.restype = None
_lib.JS_DeleteProperty.argtypes = [ctypes.c_void_p, _Value, ctypes.c_uint32, ctypes.c_int]
_lib.JS_DeleteProperty.restype = ctypes.c_int

_MODULE_ERROR: Final = "__keepModuleError"
_MODULE_PROMISE: Final = "__keepModulePromise"
_CONFIGURABLE: Final = 1


def _define_global(js_context: int, name: str, value: _Value) -> bool:
    """Define `name` on the global object as a configurable data property holding `value`
    (which is consumed); False when the global refuses it. Defining runs no script code."""
    global_object = _lib.JS_GetGlobalObject(js_context)
    status = _lib.JS_DefinePropertyValueStr(
        js_context, global_object, name.encode(), value, _CONFIGURABLE
    )
    _lib.JS_FreeValue(js_context, global_object)
    if status < 0:
        _lib.JS_FreeValue(js_context, _lib.JS_GetException(js_context))
    return bool(status == 1)


def _take_global(context: Any, js_context: int, name: str) -> Any:
    """The value `_define_global` put under `name`, removed from the global again."""
    value = context.get(name)
    global_object = _lib.JS_GetGlobalObject(js_context)
    atom = _lib.JS_NewAtom(js_context, name.encode())
    status = _lib.JS_DeleteProperty(js_context, global_object, atom, 0)
    _lib.JS_FreeAtom(js_context, atom)
    _lib.JS_FreeValue(js_context, global_object)
    if status != 1:
        if status < 0:
            _lib.JS_FreeValue(js_context, _lib.JS_GetException(js_context))
        raise RuntimeError(f"the sandbox could not remove its global {name}")
    return value


def _js_context(context: Any) -> int | None:
    runtime = ctypes.c_void_p.from_address(id(context) + _OFFSET).value
    js_context = ctypes.c_void_p.from_address(
        id(context) + _OFFSET + ctypes.sizeof(ctypes.c_void_p)
    ).value
    if not runtime or not js_context or _lib.JS_GetRuntime(js_context) != runtime:
        return None
    return js_context


def _serialize(js_context: int, text: str, flags: int, write_flags: int) -> bytes | None:
    """`text` compiled (not run) in `js_context` and written as bytecode, or None."""
    source = text.encode()
    function = _lib.JS_Eval(js_context, source, len(source), b"<input>", flags)
    if function.tag == _TAG_EXCEPTION:
        _lib.JS_FreeValue(js_context, _lib.JS_GetException(js_context))
        return None
    size = ctypes.c_size_t(0)
    pointer = _lib.JS_WriteObject(js_context, ctypes.byref(size), function, write_flags)
    _lib.JS_FreeValue(js_context, function)
    if not pointer:
        return None
    data = ctypes.string_at(pointer, size.value)
    _lib.js_free(js_context, pointer)
    return data


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
        return _serialize(
            js_context,
            self._source,
            _EVAL_GLOBAL_COMPILE_ONLY,
            _WRITE_BYTECODE | _WRITE_STRIP_SOURCE,
        )

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
        return _take_global(context, js_context, _GLOBAL_NAME.decode())


class ModuleLoader:
    """Evaluates a workflow module in a context from bytecode compiled once per source text.

    The module is compiled in a throwaway context with the phase's memory and stack
    limits (what does not compile there is evaluated from source, where the engine
    reports the error) and kept for the `capacity` most recently used (text,
    limits). Loading registers the module under the name ``<input>`` and runs its
    body exactly as ``Context.module`` does; bytecode the phase's context cannot read
    back (its memory limit reached while reading) is dropped and the module is
    evaluated from source, which reports that limit as before.
    """

    def __init__(self, capacity: int = MODULE_CAPACITY) -> None:
        self._capacity = capacity
        self._compiled: OrderedDict[tuple[str, int, int], bytes | None] = OrderedDict()
        self._lock = threading.Lock()

    def bytecode(self, text: str, *, memory_bytes: int, stack_bytes: int) -> bytes | None:
        """The compiled module `text`, or None when it must be evaluated from source."""
        found, data = self._kept((text, memory_bytes, stack_bytes))
        if found:
            return data
        return self._compile(text, memory_bytes, stack_bytes)

    def _kept(self, key: tuple[str, int, int]) -> tuple[bool, bytes | None]:
        with self._lock:
            if key not in self._compiled:
                return False, None
            self._compiled.move_to_end(key)
            return True, self._compiled[key]

    def _compile(self, text: str, memory_bytes: int, stack_bytes: int) -> bytes | None:
        context = quickjs.Context()
        context.set_memory_limit(memory_bytes)
        context.set_max_stack_size(stack_bytes)
        js_context = _js_context(context)
        data = (
            None
            if js_context is None
            else _serialize(js_context, text, _EVAL_MODULE_COMPILE_ONLY, _WRITE_BYTECODE)
        )
        with self._lock:
            self._compiled[(text, memory_bytes, stack_bytes)] = data
            self._compiled.move_to_end((text, memory_bytes, stack_bytes))
            while len(self._compiled) > self._capacity:
                self._compiled.popitem(last=False)
        return data

    def load(
        self, context: Any, text: str, enter: Any, *, memory_bytes: int, stack_bytes: int
    ) -> Any:
        """Evaluate module `text` in `context`, whose limits are `memory_bytes` and
        `stack_bytes`, through `enter`, which calls into the engine under the deadline
        (a first compile of `text` goes through it too, so the phase is charged for it).

        Returns the module's evaluation promise, or None when the module's own code
        left the global object unable to hand it over (the prelude then reaches the
        module with ``import("<input>")``); raises what evaluating it from source
        would raise.
        """
        found, data = self._kept((text, memory_bytes, stack_bytes))
        if not found:
            data = enter(self._compile, text, memory_bytes, stack_bytes)
        js_context = _js_context(context) if data is not None else None
        if data is None or js_context is None:
            return enter(context.module, text)
        return enter(self._load_bytecode, context, js_context, data, text)

    @staticmethod
    def _load_bytecode(context: Any, js_context: int, data: bytes, text: str) -> Any:
        module = _lib.JS_ReadObject(js_context, data, len(data), _READ_BYTECODE)
        if module.tag == _TAG_EXCEPTION:
            _lib.JS_FreeValue(js_context, _lib.JS_GetException(js_context))
            return context.module(text)
        promise = _lib.JS_EvalFunction(js_context, module)
        if promise.tag != _TAG_EXCEPTION:
            if not _define_global(js_context, _MODULE_PROMISE, promise):
                return None
            return _take_global(context, js_context, _MODULE_PROMISE)
        error = _lib.JS_GetException(js_context)
        if not _define_global(js_context, _MODULE_ERROR, error):
            raise RuntimeError("the workflow module failed to load")
        context.eval(f"throw globalThis.{_MODULE_ERROR}")
        return None
