"""Every exception keep_sdk raises, in one tree.

```
KeepError
├── ActionRefused               a person's action does not apply to the run or event as it is
├── ConfigurationError          bad store URL, bad policy, unknown scheme
├── PluginError                 a plugin failed to load or registered something invalid
├── ScriptRejected              the validator found errors; carries the report
├── ConnectorError              raised *by connectors* to classify a failed call
│   ├── TransientError          try again later (rate limit, 503, network blip)
│   ├── PermissionDenied        the credentials lack a permission; a person must grant it
│   ├── PreconditionFailed      definite failure: the call was refused, nothing happened
│   └── UncertainOutcome        the call may or may not have taken effect; reconcile
├── LogicError                  the script did something wrong (run status failed:logic)
│   ├── PhaseViolation          an operation the current phase forbids
│   ├── LimitExceeded           a sandbox limit (time, memory, calls, sizes) was hit
│   ├── UnknownOperation        ctx.<connector>.<op> that no connector declares
│   │   └── UnknownConnector    ctx.<connector> that is not registered
│   └── InvalidArguments        operation arguments that fail the operation's model
├── InternalError               a bug in the host or a connector (run status failed:internal)
└── StoreError                  persistence failed
    ├── NotFound                no such event, run, workflow or ledger entry
    ├── SchemaVersionError      the database schema is not the version this code expects
    ├── StoreUnavailable        the database could not be used just now (transient: retried)
    ├── StoreRolledBack         the database lost committed mutation intents (went back in time)
    └── StoreConflict           a commit point's precondition does not hold; nothing changed
        ├── EventNotPending     reserving an event that is not pending
        ├── ActiveRunExists     beginning a run while the workflow has an active one
        ├── LeaseLost           acting under a lease that expired or was taken over
        ├── RunNotActive        a commit point on a run that is paused, failed or committed
        ├── PhaseConflict       a commit point the run's phase does not allow (phases only advance)
        ├── MutationConflict    a ledger change the entry's status does not allow
        └── WorkflowPaused      beginning a run in a workflow a person paused
```

Catch `KeepError` to handle everything the SDK raises deliberately:

```python
try:
    store.reserve(...)
except keep_sdk.StoreConflict as exc:
    print(exc)          # says what was wrong and what to do
```

Connectors raise the four `ConnectorError` classes to tell the host how a failed
call must be routed; anything else a connector raises is treated as an
`InternalError`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from collections.abc import Sequence

__all__ = [
    "ActionRefused",
    "ActiveRunExists",
    "ConfigurationError",
    "ConnectorError",
    "EventNotPending",
    "InternalError",
    "InvalidArguments",
    "KeepError",
    "LeaseLost",
    "LimitExceeded",
    "LogicError",
    "MutationConflict",
    "NotFound",
    "PermissionDenied",
    "PhaseConflict",
    "PhaseViolation",
    "PluginError",
    "PreconditionFailed",
    "RunNotActive",
    "SchemaVersionError",
    "ScriptLocation",
    "ScriptRejected",
    "StoreConflict",
    "StoreError",
    "StoreRolledBack",
    "StoreUnavailable",
    "TransientError",
    "UncertainOutcome",
    "UnknownConnector",
    "UnknownOperation",
    "WorkflowPaused",
]


@dataclass(frozen=True, slots=True)
class ScriptLocation:
    """Where in a workflow script something happened (1-based line and column)."""

    line: int
    column: int | None = None
    file: str | None = None
    handler: str | None = None
    phase: str | None = None

    def __str__(self) -> str:
        where = self.file or "<script>"
        where += f":{self.line}"
        if self.column is not None:
            where += f":{self.column}"
        if self.handler:
            where += f" in {self.handler}"
            if self.phase:
                where += f".{self.phase}"
        return where


class KeepError(Exception):
    """Base of every exception keep_sdk raises on purpose."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message

    def __str__(self) -> str:
        return self.message


class ActionRefused(KeepError):
    """A person's action (skip, resolve, retry…) does not apply to the run or event as it is.

    The message says what state it is in and which action applies instead.
    """


class ConfigurationError(KeepError):
    """The SDK was configured wrongly: a bad store URL, policy value or option."""


class PluginError(KeepError):
    """A plugin could not be loaded or registered something invalid.

    `plugin` names the entry point or plugin object at fault.
    """

    def __init__(self, message: str, *, plugin: str | None = None) -> None:
        super().__init__(message)
        self.plugin = plugin


class ScriptRejected(KeepError):
    """The validator reported errors, so the script is not deployed.

    `report` is the validator's report (a `keep_sdk.validator.Report`).
    """

    def __init__(self, message: str, *, report: Any = None) -> None:
        super().__init__(message)
        self.report = report


class ConnectorError(KeepError):
    """Base of the errors a connector raises to classify a failed call."""


class TransientError(ConnectorError):
    """A temporary failure; the host retries the run after a backoff.

    `retry_after` (seconds) overrides the computed backoff when the service
    said how long to wait.
    """

    def __init__(self, message: str, *, retry_after: float | None = None) -> None:
        super().__init__(message)
        self.retry_after = retry_after


class PermissionDenied(ConnectorError):
    """The call needs a permission that is not granted; the run waits for a person."""

    def __init__(self, message: str, *, permission: str | None = None) -> None:
        super().__init__(message)
        self.permission = permission


class PreconditionFailed(ConnectorError):
    """A definite failure: the external system refused the call and nothing happened."""


class UncertainOutcome(ConnectorError):
    """The call may or may not have taken effect (a timeout after sending, say).

    The host never retries such a call blindly: it reconciles.
    """


class LogicError(KeepError):
    """The script did something the execution model does not allow.

    `location` points into the script when the host knows where.
    """

    def __init__(self, message: str, *, location: ScriptLocation | None = None) -> None:
        super().__init__(message)
        self.location = location

    def __str__(self) -> str:
        if self.location is None:
            return self.message
        return f"{self.message} (at {self.location})"


class PhaseViolation(LogicError):
    """An operation that the current handler phase forbids was called."""

    def __init__(
        self,
        message: str,
        *,
        operation: str,
        phase: str,
        location: ScriptLocation | None = None,
    ) -> None:
        super().__init__(message, location=location)
        self.operation = operation
        self.phase = phase


class LimitExceeded(LogicError):
    """A sandbox limit was exceeded; `limit` names it (``cpu_time``, ``memory``...)."""

    def __init__(self, message: str, *, limit: str, location: ScriptLocation | None = None) -> None:
        super().__init__(message, location=location)
        self.limit = limit


class UnknownOperation(LogicError):
    """The script called an operation that no registered connector declares."""

    def __init__(
        self,
        message: str,
        *,
        connector: str,
        operation: str | None = None,
        location: ScriptLocation | None = None,
    ) -> None:
        super().__init__(message, location=location)
        self.connector = connector
        self.operation = operation


class UnknownConnector(UnknownOperation):
    """The script used `ctx.<name>` for a connector that is not registered."""


class InvalidArguments(LogicError):
    """Operation arguments failed validation; the message lists every problem.

    `problems` holds one readable line per invalid field.
    """

    def __init__(
        self,
        message: str,
        *,
        problems: Sequence[str] = (),
        location: ScriptLocation | None = None,
    ) -> None:
        super().__init__(message, location=location)
        self.problems = tuple(problems)


class InternalError(KeepError):
    """A bug in the host or in a connector, not in the script."""


class StoreError(KeepError):
    """A store operation failed."""


class NotFound(StoreError, LookupError):
    """The event, run, workflow or ledger entry does not exist."""


class SchemaVersionError(StoreError):
    """The database holds a schema version this code cannot use; upgrade it first."""


class StoreUnavailable(StoreError):
    """The database could not complete an operation just now; nothing of it was kept, or
    (when the connection dropped while committing) it may have been.

    Raised for connection loss, a server restarting or shutting down, a terminated
    backend, a serialization failure or deadlock, ``database is locked``, a disk I/O
    error, a full disk or a read-only file. The runtime treats it as a transient
    failure of the run (retried after the policy's backoff, never ``failed:internal``
    while the policy's patience lasts); `reason` is the database's own message.
    """

    def __init__(self, message: str, *, reason: str = "") -> None:
        super().__init__(message)
        self.reason = reason


class StoreRolledBack(StoreError):
    """The database holds fewer mutation intents than were committed to it: it went back in
    time (a deleted ``-wal`` file after a crash, a copy restored over it), so runs that
    already made their external calls would run again and repeat them.

    Raised when the store is opened, before anything runs. `database` is the file, `mark`
    the newest intent the commit mark beside it recorded, `found` the newest intent the
    database holds (0 when none).
    """

    def __init__(self, message: str, *, database: str = "", mark: int = 0, found: int = 0) -> None:
        super().__init__(message)
        self.database = database
        self.mark = mark
        self.found = found


class StoreConflict(StoreError):
    """A commit point's precondition did not hold. The store changed nothing."""


class EventNotPending(StoreConflict):
    """A reservation named an event that is not pending (already reserved, consumed...)."""


class ActiveRunExists(StoreConflict):
    """The workflow already has an active run; only one may run at a time."""


class LeaseLost(StoreConflict):
    """The worker's lease on a workflow expired or was taken over by another worker."""


class RunNotActive(StoreConflict):
    """The run is not active (paused, failed, crashed or committed), so it cannot advance."""


class PhaseConflict(StoreConflict):
    """The run's phase does not allow this commit point; phases only move forward."""


class MutationConflict(StoreConflict):
    """The ledger entry's status does not allow this change, or the run already has one."""


class WorkflowPaused(StoreConflict):
    """A person paused the workflow; no run may begin until it is resumed."""


def _public_module() -> None:
    for name in __all__:
        obj = globals()[name]
        if isinstance(obj, type):
            obj.__module__ = "keep_sdk"


_public_module()
