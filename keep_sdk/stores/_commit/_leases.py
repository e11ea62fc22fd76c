"""Leases (compare-and-swap on one row per workflow) and the audit log's own entries."""

from __future__ import annotations

import datetime as dt

from pydantic import JsonValue

from keep_sdk.errors import LeaseLost
from keep_sdk.stores import _rules as rules
from keep_sdk.stores._commit._core import StoreCore
from keep_sdk.stores._models import AuditEntry, Lease

__all__ = ["LeasePoints"]


class LeasePoints(StoreCore):
    """acquire_lease, heartbeat_lease, release_lease and record_audit."""

    def acquire_lease(self, workflow: str, owner: str, *, ttl: dt.timedelta) -> Lease | None:
        with self._commit() as w:
            now = w.now
            current = w.tx.lease(workflow)
            if current is None:
                lease = Lease(
                    workflow=workflow, owner=owner, token=1, acquired_at=now, expires_at=now + ttl
                )
                return lease if w.tx.insert_lease(lease) else None
            live = not current.expired(now)
            if live and current.owner != owner:
                return None
            if live:
                lease = current.model_copy(update={"expires_at": now + ttl})
            else:
                lease = Lease(
                    workflow=workflow,
                    owner=owner,
                    token=current.token + 1,
                    acquired_at=now,
                    expires_at=now + ttl,
                )
            return lease if w.tx.update_lease(current, lease) else None

    def heartbeat_lease(self, lease: Lease, *, ttl: dt.timedelta) -> Lease:
        return self._extend(lease, "heartbeat", ttl, live=True)

    def release_lease(self, lease: Lease) -> None:
        self._extend(lease, "release", dt.timedelta(0), live=False)

    def _extend(self, lease: Lease, action: str, ttl: dt.timedelta, *, live: bool) -> Lease:
        """Set the held lease to expire `ttl` from now; `LeaseLost` if it is no longer held."""
        with self._commit() as w:
            current = rules.check_lease(w.tx.lease(lease.workflow), lease, w.now, action, live=live)
            renewed = current.model_copy(update={"expires_at": w.now + ttl})
            if not w.tx.update_lease(current, renewed):
                raise LeaseLost(f"cannot {action}: the lease on {lease.workflow!r} was lost")
            return renewed

    def record_audit(
        self,
        *,
        actor: str,
        action: str,
        target: str,
        workflow: str | None = None,
        detail: JsonValue = None,
    ) -> AuditEntry:
        with self._commit() as w:
            return w.audit(
                actor=actor, action=action, target=target, workflow=workflow, detail=detail
            )
