"""What a pooled worker keeps between phases: the parts of a request that rarely change.

A `PhaseRequest` carries the workflow source, the connector manifest, the host
policy and the file name with every phase; they are most of its bytes and most
of the worker's validation time. The parent sends them once per worker as a
*context* under a key and then only the key; both sides keep the same bounded,
least-recently-used `ContextLog`, updated in the same order by the same
messages, so the parent always knows what the worker holds.
"""

from __future__ import annotations

import hashlib
import json
from collections import OrderedDict
from typing import Any, Final, Generic, TypeVar

from keep_sdk.sandbox.outcome import PhaseRequest

__all__ = ["CONTEXT_FIELDS", "ContextLog", "RequestContexts", "context_key"]

CONTEXT_FIELDS: Final = frozenset({"source", "manifest", "policy", "filename"})
"""The fields of a `PhaseRequest` that travel in a context."""

_V = TypeVar("_V")


class ContextLog(Generic[_V]):
    """At most `capacity` contexts by key, the least recently used evicted first."""

    def __init__(self, capacity: int = 8) -> None:
        self.capacity = capacity
        self._entries: OrderedDict[str, _V] = OrderedDict()

    def __contains__(self, key: str) -> bool:
        return key in self._entries

    def use(self, key: str) -> _V:
        """The context `key` (KeyError when absent), now the most recently used."""
        self._entries.move_to_end(key)
        return self._entries[key]

    def put(self, key: str, value: _V) -> None:
        """Keep `value` under `key`, evicting the least recently used beyond capacity."""
        self._entries[key] = value
        self._entries.move_to_end(key)
        while len(self._entries) > self.capacity:
            self._entries.popitem(last=False)


def context_key(context: dict[str, Any]) -> str:
    """A key that names the context's content (equal content, equal key)."""
    text = json.dumps(context, sort_keys=True, separators=(",", ":"), ensure_ascii=True)
    return hashlib.sha256(text.encode()).hexdigest()[:32]


class RequestContexts:
    """The parent's memo: the context of a request, computed once per distinct
    (source, manifest object, policy object, file name)."""

    def __init__(self, capacity: int = 64) -> None:
        self._memo: ContextLog[tuple[str, dict[str, Any], tuple[object, ...]]] = ContextLog(
            capacity
        )

    def of(self, request: PhaseRequest) -> tuple[str, dict[str, Any]]:
        """The context key and the context (JSON-ready) of `request`."""
        memo_key = (
            f"{id(request.manifest)}:{id(request.policy)}:{hash(request.source)}:{request.filename}"
        )
        if memo_key in self._memo:
            key, context, kept = self._memo.use(memo_key)
            if kept[0] is request.manifest and kept[2] == request.source:
                return key, context
        context = request.model_dump(mode="json", include=set(CONTEXT_FIELDS))
        key = context_key(context)
        kept = (request.manifest, request.policy, request.source)
        self._memo.put(memo_key, (key, context, kept))
        return key, context
