"""What a store declares it can do, so ``keep conformance`` certifies exactly that.

A store class (or instance) declares its capabilities in a ``capabilities``
attribute: a frozenset of `StoreCapability`. The conformance suite runs the
tests of every declared capability and reports the others as not declared; the
tests every store must pass (publishing, runs, reservations, the ledger, leases...)
need no declaration.
"""

from __future__ import annotations

from enum import StrEnum

from keep_sdk.errors import ConfigurationError

__all__ = ["StoreCapability", "declared_capabilities"]


class StoreCapability(StrEnum):
    """One optional part of the store contract a store may declare."""

    DURABLE = "durable"
    """Durable invocations, the inbox, poll claims and attempts (`SupportsDurable` whose
    transactions implement `DurableRows`)."""

    PAGES = "pages"
    """Filtered, keyset-paginated listings of runs and events (`SupportsPages`)."""

    COUNTS = "counts"
    """Events and runs counted by workflow and status (`SupportsCounts`)."""

    READING_SNAPSHOTS = "reading-snapshots"
    """`Store.reading` answers from one snapshot: another connection's commit is not
    seen inside the block."""

    PROCESSES = "processes"
    """The URL reaches the same data from another process (races, SIGKILL)."""

    REOPEN = "reopen"
    """Opening the URL again finds the same data, as after a restart."""

    FAULT_INJECTION = "fault-injection"
    """The store calls ``fault_hook`` between the writes of each commit point
    (`SupportsFaultInjection`)."""


def declared_capabilities(store: object) -> frozenset[StoreCapability]:
    """The capabilities `store` declares in its ``capabilities`` attribute (none without one).

    Raises `ConfigurationError` naming the store and the known capabilities when the
    attribute holds a name that is not a `StoreCapability`.
    """
    declared = getattr(store, "capabilities", None)
    if declared is None:
        return frozenset()
    found: set[StoreCapability] = set()
    for name in declared:
        try:
            found.add(StoreCapability(name))
        except ValueError:
            known = ", ".join(c.value for c in StoreCapability)
            raise ConfigurationError(
                f"{type(store).__name__}.capabilities declares {name!r}, which is not a "
                f"store capability; declare some of: {known}"
            ) from None
    return frozenset(found)
