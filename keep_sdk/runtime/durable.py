"""The host side of durable operations: persist, start, park; complete on a notification.

`DurableDesk` follows the normative ordering of 002 §2.5: the invocation id and
correlation key are derived deterministically (workflow, consumer, the run's
retry-chain root and the operation's declared key fields), the invocation is
persisted with the ledger intent in one transaction, and only then is the
connector's ``start`` called with the invocation id as its idempotency token.
A crash at any point leaves an ``in_flight`` entry with an active invocation;
continuing the run calls ``start`` again with the same token, which a
connector answers without starting a second process.

A ``Pending`` answer parks the run (``paused:waiting`` at ``mutating``,
reservations kept, no lease held). A notification completes it: the store's
`apply_notification` marks invocation, ledger and run in one transaction, and
the run goes on to ``next``.
"""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from pydantic import BaseModel, ConfigDict, JsonValue

from keep_sdk.connectors import ConnectorSet, idempotency_key
from keep_sdk.contract.admission import check_notification_result, notification_result
from keep_sdk.contract.durable import (
    AttemptKind,
    Done,
    Invocation,
    InvocationContext,
    InvocationStatus,
    Notification,
    NotificationOutcome,
    derive_invocation,
    parse_duration,
)
from keep_sdk.contract.permissions import require_permission
from keep_sdk.errors import (
    ConfigurationError,
    ConnectorError,
    InternalError,
    KeepError,
    NotFound,
    PreconditionFailed,
    StoreConflict,
    TransientError,
    UnknownOperation,
)
from keep_sdk.model import Escalation, HostPolicy, LedgerEntry, RunRecord
from keep_sdk.runtime._ledger import chain_root
from keep_sdk.stores import SupportsDurable, record_notification

if TYPE_CHECKING:
    from keep_sdk.connectors import Operation
    from keep_sdk.contract.manifest import DurableDeclaration
    from keep_sdk.sandbox import MutationRequested
    from keep_sdk.stores import Store

__all__ = [
    "DurableDesk",
    "NotifyReceipt",
    "check_notification_result",
    "durable_failure_escalation",
    "logged_bytes",
    "notification_result",
]


class NotifyReceipt(BaseModel):
    """What `Runtime.notify` did: the recorded notification and, when it was delivered
    at once, the run as it ended."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    notification: Notification
    run: RunRecord | None = None

    @property
    def applied(self) -> bool:
        """Whether this notification completed its invocation."""
        return self.notification.outcome is NotificationOutcome.APPLIED


def logged_bytes(run: RunRecord) -> int:
    """UTF-8 bytes of console output `run` has stored so far (its ``logs`` lines are
    ``"<phase> <level>: <text>"``; the text is what counts against ``max_log_bytes``).

    The run record carries the total, so a run that parked and resumes in another
    process continues its count instead of starting again at zero."""
    return sum(len(line.partition(": ")[2].encode("utf-8", "surrogatepass")) for line in run.logs)


DURABLE_FAILURE_ACTIONS = ("retry",)
"""What a person may do about a durable operation that failed definitely."""


def durable_failure_escalation(
    run: RunRecord, entry: LedgerEntry, error: str, now: dt.datetime
) -> Escalation:
    """The escalation of a durable operation that finished with an error: the run ended
    ``failed:logic`` keeping its reservations, so nothing submits it again until a person
    retries it (once more) after reading the connector's reason."""
    return Escalation(
        run_id=run.id,
        workflow=run.workflow,
        reason=f"{error}; its events stay reserved and nothing is submitted again until "
        "a person retries the run",
        actions=list(DURABLE_FAILURE_ACTIONS),
        ledger_id=entry.id,
        created_at=now,
    )


def durable_store(store: Store) -> SupportsDurable:
    """`store` as a `SupportsDurable`; `ConfigurationError` for a store without durable rows."""
    if not isinstance(store, SupportsDurable):
        raise ConfigurationError(
            f"the store {type(store).__name__} does not keep durable invocations; use a "
            "TransactionalStore whose transactions implement DurableRows"
        )
    return store


class DurableDesk:
    """Performs durable operations for the runtime and integrates their completion."""

    def __init__(
        self,
        *,
        store: Store,
        connectors: ConnectorSet,
        policy: HostPolicy,
        now: Callable[[], dt.datetime],
        take_logs: Callable[[str], Sequence[str]],
    ) -> None:
        self.store = store
        self.connectors = connectors
        self.policy = policy
        self.now = now
        self.take_logs = take_logs

    @property
    def durable(self) -> SupportsDurable:
        """The store's durable commit points."""
        return durable_store(self.store)

    def perform(
        self,
        run: RunRecord,
        mutation: MutationRequested,
        grants: list[str],
        declared: Operation[BaseModel],
        semantics: DurableDeclaration,
    ) -> RunRecord:
        """Check, persist (ledger intent and invocation together) and start the operation.

        `semantics` are the key fields and park timeout of the run's version (frozen at
        deploy, `keep_sdk.runtime.frozen.durable_semantics`), not necessarily the
        connector's current ones.
        """
        what = f"ctx.{mutation.connector}.{mutation.operation}"
        args = declared.parse(mutation.arguments, connector=mutation.connector)
        require_permission(what, declared.permission, grants, run.workflow)
        params = args.model_dump(mode="json", by_alias=True)
        root = chain_root(self.store, run)
        key_values = tuple(
            _field(params, name, mutation.connector, mutation.operation)
            for name in semantics.key_fields
        )
        invocation_id, correlation_key = self._fresh_invocation(run, root, key_values)
        timeout_at = (
            self.now() + parse_duration(semantics.timeout)
            if semantics.timeout is not None
            else None
        )
        prepared = run.prepare_result
        entry, invocation = self.durable.record_durable_intent(
            run.id,
            connector=mutation.connector,
            operation=mutation.operation,
            params=params,
            idempotency_key=idempotency_key(run.workflow, run.handler, root),
            invocation_id=invocation_id,
            correlation_key=correlation_key,
            timeout_at=timeout_at,
            ui_title=prepared.ui.title if prepared and prepared.ui else None,
        )
        return self.start(run, entry, invocation)

    def _fresh_invocation(
        self, run: RunRecord, root: str, key_values: tuple[str, ...]
    ) -> tuple[str, str]:
        """The chain's invocation id and correlation key; after a definite failure that a
        person chose to retry, the next free attempt (``ROOT.rN``) so that the retry submits
        once more instead of meeting the failed invocation."""
        attempt, chain = 0, root
        while True:
            invocation_id, correlation_key = derive_invocation(
                run.workflow, run.handler, chain, key_values
            )
            try:
                earlier = self.durable.get_invocation(invocation_id)
            except NotFound:
                return invocation_id, correlation_key
            if earlier.status is not InvocationStatus.FAILED or earlier.run_id == run.id:
                return invocation_id, correlation_key
            attempt += 1
            chain = f"{root}.r{attempt}"

    def start(self, run: RunRecord, entry: LedgerEntry, invocation: Invocation) -> RunRecord:
        """Call ``start`` with the invocation's token and integrate the answer.

        A transient failure propagates (the run backs off and calls ``start``
        again with the same token). Any other failure of ``start`` itself, a
        garbage answer included, may or may not have started the work; since
        ``start`` is idempotent by token it is retried the same way, as a
        transient failure. ``Done`` with an error is a definite failure: the
        invocation and ledger entry become ``failed`` and `PreconditionFailed`
        propagates.
        """
        what = f"ctx.{entry.connector}.{entry.operation}"
        context = InvocationContext(
            invocation_id=invocation.id,
            correlation_key=invocation.correlation_key,
            idempotency_key=entry.idempotency_key,
            timeout_at=invocation.timeout_at,
            token=invocation.token,
        )
        try:
            answer = self.connectors[entry.connector].start(entry.operation, entry.params, context)
        except TransientError:
            raise
        except (ConnectorError, InternalError) as exc:
            raise TransientError(
                f"start of {what} failed ({exc}); it is called again with the same token "
                f"{invocation.id}, which never starts a second process"
            ) from exc
        next_poll_at = None
        if not isinstance(answer, Done) and answer.token is not None:
            next_poll_at = self.now() + dt.timedelta(seconds=self.policy.backoff.delay(1))
        _, ended = self.durable.record_start_answer(
            invocation.id, answer, next_poll_at=next_poll_at, logs=self.take_logs(run.id)
        )
        if isinstance(answer, Done) and not answer.ok:
            raise PreconditionFailed(f"{what} finished with an error: {answer.error}")
        for early in self.durable.list_notifications(invocation.id):
            if early.outcome is NotificationOutcome.PENDING:
                resumed = self.apply(early.id)
                if resumed is not None:
                    return resumed
        return ended

    def poll(
        self, invocation_id: str, *, owner: str, claim_s: float = 60.0
    ) -> tuple[Invocation, RunRecord] | None:
        """Claim a due polling invocation, poll it, integrate the answer.

        Returns None when another worker holds a live claim or the poll failed
        (the failure is an attempt record and the next poll is backed off).
        """
        store = self.durable
        claimed = store.claim_invocation(
            invocation_id, owner, until=self.now() + dt.timedelta(seconds=claim_s)
        )
        if claimed is None:
            return None
        entry = self.store.get_ledger_entry(claimed.ledger_id)
        context = InvocationContext(
            invocation_id=claimed.id,
            correlation_key=claimed.correlation_key,
            idempotency_key=entry.idempotency_key,
            timeout_at=claimed.timeout_at,
            token=claimed.token,
        )
        delay = dt.timedelta(seconds=self.policy.backoff.delay(claimed.polls + 2))
        try:
            answer = self.connectors[claimed.connector].poll(
                claimed.operation, entry.params, context
            )
        except KeepError as exc:
            store.record_poll_failure(
                claimed.id,
                error=f"{type(exc).__name__}: {exc}",
                next_poll_at=self.now() + delay,
                claim_version=claimed.claim_version,
            )
            return None
        return store.record_start_answer(
            claimed.id,
            answer,
            kind=AttemptKind.POLL,
            next_poll_at=self.now() + delay,
            claim_version=claimed.claim_version,
        )

    def notify(self, correlation_key: str, result: JsonValue, *, source: str) -> Notification:
        """Record a notification for `correlation_key` (checked first) in the inbox."""
        return record_notification(
            self.store, correlation_key, result, source=source, policy=self.policy
        )

    def apply(self, notification_id: str) -> RunRecord | None:
        """Complete the parked run of a pending notification; None when its run is not
        parked yet (the notification stays pending and a worker applies it later)."""
        try:
            _, run = self.durable.apply_notification(notification_id)
        except StoreConflict:
            return None
        return run


def _field(params: JsonValue, name: str, connector: str, operation: str) -> str:
    if not isinstance(params, dict) or name not in params:
        raise UnknownOperation(
            f"ctx.{connector}.{operation} has key field {name!r} in the version's declaration, "
            f"but its arguments have no value for it; pass {name!r} or redeploy the workflow",
            connector=connector,
            operation=operation,
        )
    value = params[name]
    return value if isinstance(value, str) else json.dumps(value, sort_keys=True)
