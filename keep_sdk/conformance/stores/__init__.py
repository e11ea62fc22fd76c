"""The store conformance suite: subclass `StoreConformance`, override the `store` fixture.

Each mixin covers one area and can be used alone; `StoreConformance` is all of
them. Capabilities (`supports_durable`, `supports_pages`, `supports_counts`,
`supports_reading_snapshots`, `supports_processes`, `supports_reopen`,
`supports_fault_injection`, one per `keep_sdk.stores.StoreCapability`, and
`supports_threads`) are class attributes with conservative defaults; a test needing
one the class does not declare is skipped with the capability's name, and counted
as not declared in the "keep store certificate" pytest prints.
"""

from keep_sdk.conformance.stores._backlog import BacklogTests
from keep_sdk.conformance.stores._base import StoreTestBase
from keep_sdk.conformance.stores._changes import ChangeTests
from keep_sdk.conformance.stores._claims_race import ClaimRaceTests
from keep_sdk.conformance.stores._clauses import ClauseTests
from keep_sdk.conformance.stores._commits import CommitTests
from keep_sdk.conformance.stores._durable import DurableTestBase, DurableTests
from keep_sdk.conformance.stores._durable_clauses import DurableClauseTests
from keep_sdk.conformance.stores._durable_rows import DurableRowTests
from keep_sdk.conformance.stores._leases import LeaseTests
from keep_sdk.conformance.stores._ledger import LedgerTests
from keep_sdk.conformance.stores._merged import MergedCheckpointTests
from keep_sdk.conformance.stores._pages import CountTests, PageTests
from keep_sdk.conformance.stores._planning import PlanningTests
from keep_sdk.conformance.stores._props_counts import CountPropertyTests
from keep_sdk.conformance.stores._props_pages import PagePropertyTests
from keep_sdk.conformance.stores._publish import PublishTests
from keep_sdk.conformance.stores._queries import QueryTests
from keep_sdk.conformance.stores._reservations import ReservationTests
from keep_sdk.conformance.stores._run_facts import RunFactTests
from keep_sdk.conformance.stores._runs import RunTests
from keep_sdk.conformance.stores._snapshots import SnapshotTests
from keep_sdk.conformance.stores._support import (
    FaultInjector,
    InjectedFault,
    ManualClock,
    snapshot,
)
from keep_sdk.conformance.stores._times import TimeTests

__all__ = [
    "BacklogTests",
    "ChangeTests",
    "ClaimRaceTests",
    "ClauseTests",
    "CommitTests",
    "CountPropertyTests",
    "CountTests",
    "DurableClauseTests",
    "DurableRowTests",
    "DurableTestBase",
    "DurableTests",
    "FaultInjector",
    "InjectedFault",
    "LeaseTests",
    "LedgerTests",
    "ManualClock",
    "MergedCheckpointTests",
    "PagePropertyTests",
    "PageTests",
    "PlanningTests",
    "PublishTests",
    "QueryTests",
    "ReservationTests",
    "RunFactTests",
    "RunTests",
    "SnapshotTests",
    "StoreConformance",
    "StoreTestBase",
    "TimeTests",
    "snapshot",
]


class StoreConformance(
    PublishTests,
    RunTests,
    ReservationTests,
    CommitTests,
    MergedCheckpointTests,
    LedgerTests,
    QueryTests,
    LeaseTests,
    BacklogTests,
    RunFactTests,
    ChangeTests,
    PageTests,
    CountTests,
    DurableTests,
    DurableClauseTests,
    DurableRowTests,
    TimeTests,
    ClauseTests,
    PagePropertyTests,
    CountPropertyTests,
    ClaimRaceTests,
    SnapshotTests,
    PlanningTests,
):
    """Every store test. Subclass it as ``Test<YourStore>`` and override `store`."""
