"""Stores: durable topics, runs, handler state, the mutation ledger, audit log and leases.

`Store` is the protocol (the commit points of the execution model plus the
queries the scheduler and CLI need). `TransactionalStore` implements all of it
once over the small `Transaction` protocol of row reads and writes;
`MemoryStore` (the reference) and `SqlStore` (SQLite or PostgreSQL) implement
only that. `open_store(url)` picks a store by URL scheme (`keep_sdk.open_store`
also knows the schemes plugins register). Stores report committed run and
ledger changes to listeners (`SupportsChangeListeners`); `FaultPoint` names
where they call a fault hook. A store declares the optional parts of the contract
it keeps (`StoreCapability`) in its ``capabilities`` attribute.
"""

from typing import TYPE_CHECKING, Any

from keep_sdk.stores._capabilities import StoreCapability, declared_capabilities
from keep_sdk.stores._changes import (
    ChangeListener,
    LedgerChange,
    RunChange,
    StoreChange,
    SupportsChangeListeners,
)
from keep_sdk.stores._commit import TransactionalStore
from keep_sdk.stores._durable import DurableRows, PersonSettlement, SupportsDurable
from keep_sdk.stores._models import (
    UNCHANGED,
    AuditEntry,
    BegunRun,
    ConsumerWake,
    HandlerRecord,
    HandlerSpec,
    Lease,
    MutationIntent,
    Publication,
    PublishOutcome,
    PublishResult,
    Resolution,
    RunCommit,
    StatusCounts,
    Unchanged,
    WakeReason,
    WorkflowRecord,
    WorkflowVersion,
)
from keep_sdk.stores._open import BUILTIN_OPENERS, DEFAULT_STORE_URL, open_store, store_scheme
from keep_sdk.stores._outside import (
    publish_from_outside,
    record_notification,
    workflow_for_topic,
)
from keep_sdk.stores._protocol import (
    Clock,
    FaultHook,
    Store,
    SupportsBulkLoad,
    SupportsCounts,
    SupportsFaultInjection,
    SupportsFewerCheckpoints,
    SupportsPages,
    SupportsPeekCost,
    utc_now,
)
from keep_sdk.stores._transaction import Transaction
from keep_sdk.stores._url import redacted_url
from keep_sdk.stores.faults import FaultPoint
from keep_sdk.stores.memory import MemoryStore

if TYPE_CHECKING:
    from keep_sdk.stores.sql import SqlStore

__all__ = [  # noqa: RUF022 (plain sorted(), as tests/test_public_api.py checks)
    "AuditEntry",
    "BUILTIN_OPENERS",
    "BegunRun",
    "ChangeListener",
    "Clock",
    "ConsumerWake",
    "DEFAULT_STORE_URL",
    "DurableRows",
    "FaultHook",
    "FaultPoint",
    "HandlerRecord",
    "HandlerSpec",
    "Lease",
    "LedgerChange",
    "MemoryStore",
    "MutationIntent",
    "PersonSettlement",
    "Publication",
    "PublishOutcome",
    "PublishResult",
    "Resolution",
    "RunChange",
    "RunCommit",
    "SqlStore",
    "StatusCounts",
    "Store",
    "StoreCapability",
    "StoreChange",
    "SupportsBulkLoad",
    "SupportsChangeListeners",
    "SupportsCounts",
    "SupportsDurable",
    "SupportsFaultInjection",
    "SupportsFewerCheckpoints",
    "SupportsPages",
    "SupportsPeekCost",
    "Transaction",
    "TransactionalStore",
    "UNCHANGED",
    "Unchanged",
    "WakeReason",
    "WorkflowRecord",
    "WorkflowVersion",
    "declared_capabilities",
    "open_store",
    "publish_from_outside",
    "record_notification",
    "redacted_url",
    "store_scheme",
    "utc_now",
    "workflow_for_topic",
]


def __getattr__(name: str) -> Any:
    """`SqlStore` is imported on first use: SQLAlchemy costs 0.2 s to import."""
    if name == "SqlStore":
        from keep_sdk.stores.sql import SqlStore

        return SqlStore
    raise AttributeError(f"module 'keep_sdk.stores' has no attribute {name!r}")
