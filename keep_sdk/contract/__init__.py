"""The contract every layer shares: the phase table, connector and workflow manifests.

Nothing here imports any other keep_sdk package but `model` and `errors`, so the
validator, sandbox, runtime and stores read one definition of what a script may
do in each phase and what a workflow and a connector declare.
"""

from keep_sdk.contract.manifest import (
    ConnectorManifest,
    DurableDeclaration,
    Manifest,
    OperationManifest,
)
from keep_sdk.contract.permissions import require_permission
from keep_sdk.contract.phases import (
    TOPIC_OPERATIONS,
    allowed_kinds,
    allowed_phases,
    allowed_topic_operations,
    where_allowed,
)
from keep_sdk.contract.workflow import (
    RESERVED_NAME_PREFIX,
    CallSite,
    ConsumerManifest,
    CronSchedule,
    DefaultExport,
    HandlerLocation,
    IntervalSchedule,
    ProducerManifest,
    Schedule,
    Span,
    WorkflowManifest,
)

__all__ = [
    "RESERVED_NAME_PREFIX",
    "TOPIC_OPERATIONS",
    "CallSite",
    "ConnectorManifest",
    "ConsumerManifest",
    "CronSchedule",
    "DefaultExport",
    "DurableDeclaration",
    "HandlerLocation",
    "IntervalSchedule",
    "Manifest",
    "OperationManifest",
    "ProducerManifest",
    "Schedule",
    "Span",
    "WorkflowManifest",
    "allowed_kinds",
    "allowed_phases",
    "allowed_topic_operations",
    "require_permission",
    "where_allowed",
]
