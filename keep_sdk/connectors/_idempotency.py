"""Deterministic idempotency keys for mutations."""

from __future__ import annotations

import hashlib

__all__ = ["idempotency_key"]


def idempotency_key(workflow: str, handler: str, run_id: str) -> str:
    """The key the host gives the mutation of `run_id` of `handler` in `workflow`.

    The same inputs always give the same key, so a replayed or reconciled call
    carries the key of the original attempt; different runs never share one.
    The key is ASCII, 45 characters, safe in HTTP headers: ``keep-<40 hex>``.
    """
    digest = hashlib.sha256("\x1f".join((workflow, handler, run_id)).encode()).hexdigest()
    return f"keep-{digest[:40]}"
