"""Locked-down QuickJS realms, kept per thread and run again for later phases of the
same workflow version.

Every context the sandbox builds is locked down: the prelude freezes every object
reachable from the global object, from syntax and through prototypes, which costs a
few milliseconds. A *realm* is such a context kept for reuse: an empty decoy module
is evaluated in it first (so ``import("<input>")`` can only ever reach the decoy, never
an earlier phase's module) and the prelude boots with ``reusable`` set. A later phase
starts with the prelude's ``next``, which refuses (``"dirty"``) unless the global
object is exactly as the realm left it, then gives the phase fresh state, its own clock
and a fresh ``Math.random`` seed. The host keeps a realm only after a phase that left
it clean: no failure out of an engine entry (an interrupt, out of memory), no job
queued, the global object unchanged, the memory in use within `REALM_MEMORY_SLACK` of
what the realm started with, and fewer than `REALM_PHASES` phases run. See
docs/sandbox.md, "Realms".
"""

from __future__ import annotations

import ctypes
import threading
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Any, Final

import quickjs

from keep_sdk.sandbox.interrupt import InterruptGuard
from keep_sdk.sandbox.outcome import PhaseRequest

__all__ = [
    "REALM_CAPACITY",
    "REALM_MEMORY_SLACK",
    "REALM_PHASES",
    "Realm",
    "RealmKey",
    "RealmPolicy",
    "realm_key",
    "realm_policy",
    "realms",
]

REALM_PHASES: Final = 256
"""Phases one realm runs before it is dropped and built again."""

REALM_CAPACITY: Final = 32
"""Realms one thread keeps (least recently used dropped first): a worker serving more
workflows than this in one thread builds realms again. Each holds about 0.4 MB, and at most
`REALM_MEMORY_SLACK` more as its phases leave their module records."""

REALM_MEMORY_SLACK: Final = 1024 * 1024
"""Bytes a realm may hold beyond what it held after its first phase and still be reused."""

RealmKey = tuple[str, int, int, bool]
"""(workflow source, memory limit, stack limit, whether the clock is fixed)."""

_MALLOC_STATE: Final = 5 * ctypes.sizeof(ctypes.c_void_p)
"""Where ``JSRuntime.malloc_state`` (count, size, limit) starts: after the five allocator
functions. `Realm` checks it against ``Context.memory()`` before relying on it."""

_LIBRARY = ctypes.CDLL(quickjs._quickjs.__file__)
_LIBRARY.JS_IsJobPending.argtypes = [ctypes.c_void_p]
_LIBRARY.JS_IsJobPending.restype = ctypes.c_bool


def realm_key(request: PhaseRequest) -> RealmKey:
    """The realm a phase of `request` may run in: one per workflow source, limits and
    clock mode, so phases of other workflows never share one."""
    limits = request.policy.sandbox
    return (
        request.source,
        limits.memory_bytes,
        limits.stack_bytes,
        request.determinism is not None,
    )


@dataclass
class RealmPolicy:
    """When realms are used. `after` is how many phases of a workflow version a thread
    runs in contexts it does not keep before it keeps one as the version's realm; every
    context is locked down alike, so keeping one costs nothing more. ``None`` keeps none:
    every phase then builds its own context."""

    after: int | None = 0


realm_policy: Final = RealmPolicy()
"""The process's policy; benchmarks and tests set `after` to ``None`` to compare."""


@dataclass(eq=False)
class Realm:
    """A context built for reuse, with its guard and the prelude's ``dispatch``."""

    key: RealmKey
    context: Any
    guard: InterruptGuard
    dispatch: Any
    phases: int = 0
    memory: int | None = None
    _state: Any = field(default=None, repr=False)

    def __post_init__(self) -> None:
        state = (ctypes.c_size_t * 3).from_address(self.guard.runtime + _MALLOC_STATE)
        usage = self.context.memory()
        read = (usage["malloc_count"], usage["malloc_size"], usage["malloc_limit"])
        if tuple(state) == read:
            self._state = state

    def idle(self) -> bool:
        """Whether no job is queued in the engine."""
        return not _LIBRARY.JS_IsJobPending(self.guard.runtime)

    def used(self) -> int:
        """Bytes the engine has allocated (read from the runtime's allocator state when
        its layout was confirmed, else computed by walking the heap)."""
        if self._state is not None:
            return int(self._state[1])
        return int(self.context.memory()["malloc_size"])

    def close(self) -> None:
        """Interrupt everything from now on and let the context go."""
        self.guard.close()
        self.dispatch = None


@dataclass
class _Thread:
    kept: OrderedDict[RealmKey, Realm] = field(default_factory=OrderedDict)
    seen: OrderedDict[RealmKey, int] = field(default_factory=OrderedDict)


class Realms:
    """The realms of each thread (a QuickJS context is used by one thread only)."""

    def __init__(self) -> None:
        self._local = threading.local()

    def _thread(self) -> _Thread:
        state: _Thread | None = getattr(self._local, "state", None)
        if state is None:
            state = _Thread()
            self._local.state = state
        return state

    def take(self, key: RealmKey) -> Realm | None:
        """The kept realm for `key`, removed from the pool while a phase uses it (None
        while the policy builds no realms: every phase then runs in a fresh context)."""
        if realm_policy.after is None:
            return None
        return self._thread().kept.pop(key, None)

    def peek(self, key: RealmKey) -> Realm | None:
        """The realm kept for `key`, left in the pool."""
        return self._thread().kept.get(key)

    def wanted(self, key: RealmKey) -> bool:
        """Count a phase of `key` run without a realm; whether it should build one."""
        after = realm_policy.after
        if after is None:
            return False
        seen = self._thread().seen
        count = seen.pop(key, 0) + 1
        seen[key] = count
        while len(seen) > 4 * REALM_CAPACITY:
            seen.popitem(last=False)
        return count > after

    def spoil(self, key: RealmKey) -> None:
        """Build no more realms for `key`: its script changes the global object."""
        seen = self._thread().seen
        seen.pop(key, None)
        seen[key] = -(2**62)

    def give(self, realm: Realm) -> None:
        """Keep `realm` for its key's next phase if it may run one; else close it."""
        realm.phases += 1
        kept = realm.phases < REALM_PHASES and realm.idle()
        if kept:
            used = realm.used()
            if realm.memory is None:
                realm.memory = used
            kept = used <= realm.memory + REALM_MEMORY_SLACK
        if not kept:
            realm.close()
            return
        pool = self._thread().kept
        old = pool.pop(realm.key, None)
        if old is not None:
            old.close()
        pool[realm.key] = realm
        while len(pool) > REALM_CAPACITY:
            pool.popitem(last=False)[1].close()

    def clear(self) -> None:
        """Close every realm this thread keeps and forget the phases it counted."""
        state = self._thread()
        for realm in state.kept.values():
            realm.close()
        state.kept.clear()
        state.seen.clear()


realms: Final = Realms()
"""The process's realms."""
