"""Fault injection for the built-in service doubles: fail the way real services fail."""

from __future__ import annotations

import threading
from dataclasses import dataclass
from enum import StrEnum

__all__ = ["Fault", "FaultKind", "FaultPlan"]


class FaultKind(StrEnum):
    """How the next matching call fails."""

    TRANSIENT = "transient"
    """TransientError before any effect (a 503 or rate limit)."""
    PERMISSION_DENIED = "permission_denied"
    """PermissionDenied before any effect (a 403)."""
    FAILURE = "failure"
    """PreconditionFailed before any effect: a definite failure (a 400 or 404)."""
    TIMEOUT_BEFORE_EFFECT = "timeout_before_effect"
    """UncertainOutcome, and the effect did not happen."""
    TIMEOUT_AFTER_EFFECT = "timeout_after_effect"
    """UncertainOutcome, but the effect happened."""
    SLOW = "slow"
    """The call succeeds after sleeping `delay_s` seconds."""
    CRASH_BEFORE_EFFECT = "crash_before_effect"
    """The process is killed with SIGKILL before the effect (crash tests)."""
    CRASH_AFTER_EFFECT = "crash_after_effect"
    """The process is killed with SIGKILL right after the effect is durable."""


@dataclass
class Fault:
    """One injected fault: `kind` for the next `times` calls of `operation` (None: any).

    ``operation="reconcile:appendRow"`` targets the reconcile method of
    ``appendRow``: a transient fault there makes reconciliation answer ``retry``.
    """

    kind: FaultKind
    operation: str | None = None
    times: int | None = 1
    delay_s: float = 0.0


class FaultPlan:
    """Faults waiting to fire, consumed in the order they were injected. Thread-safe."""

    def __init__(self) -> None:
        self._faults: list[Fault] = []
        self._lock = threading.Lock()

    def inject(
        self,
        kind: FaultKind | str,
        *,
        operation: str | None = None,
        times: int | None = 1,
        delay_s: float = 0.0,
    ) -> Fault:
        """Make the next `times` calls of `operation` (every operation when None) fail.

        `times=None` keeps the fault until `clear()`.
        """
        fault = Fault(FaultKind(kind), operation, times, delay_s)
        with self._lock:
            self._faults.append(fault)
        return fault

    def take(self, operation: str) -> Fault | None:
        """The fault that applies to this call of `operation`, used up by one."""
        with self._lock:
            for fault in self._faults:
                if fault.operation not in (None, operation):
                    continue
                if fault.times is not None:
                    fault.times -= 1
                    if fault.times <= 0:
                        self._faults.remove(fault)
                return fault
        return None

    def clear(self) -> None:
        """Remove every pending fault."""
        with self._lock:
            self._faults.clear()

    def __len__(self) -> int:
        return len(self._faults)
