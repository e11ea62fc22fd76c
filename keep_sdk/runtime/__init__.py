"""The runtime: one producer or consumer run through the sandbox, the store and connectors."""

from keep_sdk.runtime._actions import (
    PersonActions,
    ResolveChoice,
    ledger_decision,
    resolve_choices,
    run_resolution,
)
from keep_sdk.runtime._failures import Route, classify, route
from keep_sdk.runtime._host import PhaseHost, script_event
from keep_sdk.runtime._schedules import next_run_at
from keep_sdk.runtime._tracing import call_outcome
from keep_sdk.runtime.durable import NotifyReceipt
from keep_sdk.runtime.engine import CheckedScript, Runtime

__all__ = [
    "CheckedScript",
    "NotifyReceipt",
    "PersonActions",
    "PhaseHost",
    "ResolveChoice",
    "Route",
    "Runtime",
    "call_outcome",
    "classify",
    "ledger_decision",
    "next_run_at",
    "resolve_choices",
    "route",
    "run_resolution",
    "script_event",
]
