"""Built-in connectors: in-memory doubles of gmail, sheets, slack, and the durable
approvals and jobs.

The built-in plugin (`keep_sdk.plugins.builtin`) registers them.
"""

from __future__ import annotations

from keep_sdk.connectors.builtin._approvals import Approvals
from keep_sdk.connectors.builtin._double import ServiceDouble
from keep_sdk.connectors.builtin._gmail import Gmail
from keep_sdk.connectors.builtin._jobs import Jobs
from keep_sdk.connectors.builtin._sheets import Sheets
from keep_sdk.connectors.builtin._slack import Slack
from keep_sdk.connectors.builtin.faults import Fault, FaultKind, FaultPlan
from keep_sdk.connectors.builtin.seeding import SEED_FAULT_KINDS, SEED_SHAPES, SeedFault

__all__ = [
    "BUILTIN_CONNECTORS",
    "SEED_FAULT_KINDS",
    "SEED_SHAPES",
    "Approvals",
    "Fault",
    "FaultKind",
    "FaultPlan",
    "Gmail",
    "Jobs",
    "SeedFault",
    "ServiceDouble",
    "Sheets",
    "Slack",
]

BUILTIN_CONNECTORS: tuple[type[ServiceDouble], ...] = (Approvals, Gmail, Jobs, Sheets, Slack)
