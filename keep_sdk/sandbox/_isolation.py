"""The two ways to run a phase, behind one interface."""

from __future__ import annotations

from typing import Protocol

from keep_sdk.sandbox._host import HostInterface
from keep_sdk.sandbox.engine import run_phase
from keep_sdk.sandbox.outcome import PhaseRequest, PhaseResult

__all__ = ["InProcessIsolation", "Isolation"]


class Isolation(Protocol):
    """Runs one phase and returns how it ended; never raises."""

    def run(self, request: PhaseRequest, host: HostInterface) -> PhaseResult:
        """Run `request`, performing its ctx calls through `host`."""
        ...

    def close(self) -> None:
        """Release processes or other resources."""
        ...


class InProcessIsolation:
    """Runs the phase in the calling thread: fastest, bounded by the interrupt guard.

    It does not survive an engine crash (SIGSEGV); `ProcessIsolation` does.
    """

    def run(self, request: PhaseRequest, host: HostInterface) -> PhaseResult:
        """Run `request` in a fresh context in this process."""
        return run_phase(request, host)

    def close(self) -> None:
        """Nothing to release."""
