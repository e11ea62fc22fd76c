"""Live updates: a fingerprint of what the pages show, sent over server-sent events.

The store may be changed by other processes (``keep worker``, ``keep grant``), so
the console looks every `interval_s` seconds at a cheap fingerprint: each
workflow's version, pause flag and grants, its newest events, the newest runs and
ledger entries with their status and phase, the runs waiting for a person and the
newest audit entries. When it changes, the stream sends a ``change`` event and the
page reloads its main section.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import AsyncIterator, Awaitable, Callable

import anyio
import anyio.to_thread

from keep_sdk.console._views import pager
from keep_sdk.model import RunStatus
from keep_sdk.stores import Store

__all__ = ["fingerprint", "stream"]

_RECENT = 50
_WAITING = (RunStatus.PAUSED_APPROVAL, RunStatus.PAUSED_RECONCILIATION, RunStatus.PAUSED_TRANSIENT)


def fingerprint(store: Store) -> str:
    """A digest that changes whenever anything the console's pages show changes."""
    p = pager(store)
    parts: list[object] = []
    for record in store.list_workflows():
        parts.append(record.model_dump(mode="json"))
        parts += [(e.id, e.status.value) for e in p.page_events(record.name, limit=_RECENT)]
    parts += [
        (r.id, r.status.value, r.phase.value, r.updated_at.isoformat())
        for r in p.page_runs(limit=_RECENT)
    ]
    for status in _WAITING:
        parts += [(r.id, r.status.value) for r in p.page_runs(status=status, limit=_RECENT)]
    parts += [(e.id, e.status.value, e.resolved_by) for e in p.page_ledger(limit=_RECENT)]
    audit = store.audit_log()
    parts.append(audit[-1].seq if audit else 0)
    return hashlib.sha256(json.dumps(parts, default=str).encode()).hexdigest()


async def stream(
    look: Callable[[], str], *, interval_s: float, stopped: Callable[[], Awaitable[bool]]
) -> AsyncIterator[str]:
    """Server-sent events: ``change`` whenever `look()` differs from the last look, a comment
    every look to keep the connection open, until `stopped()` returns true."""
    last = await anyio.to_thread.run_sync(look)
    yield f"event: hello\ndata: {last[:12]}\n\n"
    while True:
        await anyio.sleep(interval_s)
        if await stopped():
            return
        now = await anyio.to_thread.run_sync(look)
        if now != last:
            last = now
            yield f"event: change\ndata: {now[:12]}\n\n"
        else:
            yield ": idle\n\n"
