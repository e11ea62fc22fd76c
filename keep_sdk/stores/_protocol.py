"""The Store protocol: the commit points of the execution model, the queries, the leases.

Every method is atomic: it either does all it says or, raising, changes nothing.
A precondition that does not hold raises a `StoreConflict` subclass naming what
was wrong; a missing workflow, run, event or ledger entry raises `NotFound`.
Nothing is skipped silently. Times come from the store's clock (aware UTC).
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Collection, Sequence
from contextlib import AbstractContextManager
from typing import Protocol, runtime_checkable

from pydantic import JsonValue

from keep_sdk.model import (
    Event,
    EventStatus,
    FailureKind,
    HandlerKind,
    LedgerEntry,
    LedgerStatus,
    MutationApplied,
    MutationNone,
    MutationSkipped,
    PhaseTrace,
    PrepareResult,
    RunPhase,
    RunRecord,
    RunStatus,
)
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
    PublishResult,
    Resolution,
    RunCommit,
    StatusCounts,
    Unchanged,
    WorkflowRecord,
    WorkflowVersion,
)

__all__ = [
    "Clock",
    "FaultHook",
    "Store",
    "SupportsBulkLoad",
    "SupportsCounts",
    "SupportsFaultInjection",
    "SupportsPages",
    "SupportsPeekCost",
    "utc_now",
]

Clock = Callable[[], dt.datetime]
"""Returns the current time as an aware UTC datetime; stores take one to make time testable."""

FaultHook = Callable[[str], None]
"""Called by a store between the writes of a commit point with the point's name; may raise."""

MutationResultValue = MutationApplied | MutationNone | MutationSkipped


def utc_now() -> dt.datetime:
    """The wall-clock time as an aware UTC datetime (the default `Clock`)."""
    return dt.datetime.now(dt.UTC)


@runtime_checkable
class Store(Protocol):
    """Durable topics, runs, handler state, the mutation ledger, the audit log and leases.

    The runtime and scheduler call exactly these methods; each one is a commit
    point or a query. Conflicts raise (and change nothing):

    - `ActiveRunExists`: a second active run in a workflow;
    - `WorkflowPaused`: beginning a run in a paused workflow;
    - `RunNotActive`: advancing a run that is paused, failed, crashed or committed;
    - `PhaseConflict`: a commit point the run's phase does not allow;
    - `EventNotPending`: reserving or skipping an event that is not pending;
    - `MutationConflict`: a ledger change the entry's status does not allow;
    - `LeaseLost`: heartbeating or releasing a lease that expired or was taken over.

    `TransactionalStore` implements all of it over the smaller `Transaction`
    protocol. Optional extras: `SupportsChangeListeners` (committed run and ledger
    changes), `SupportsFaultInjection`, `SupportsPeekCost`, `SupportsBulkLoad`,
    `SupportsPages` (keyset pages, newest first).
    """

    # Workflows

    def deploy(
        self,
        name: str,
        source: str,
        manifest: JsonValue,
        *,
        handlers: Sequence[HandlerSpec] = (),
    ) -> int:
        """Store a new version of workflow `name` and make it current; return its number.

        Versions start at 1 and are kept. Topics, events, handler state and grants
        survive a new version. Every producer in `handlers` becomes due now; a
        handler left out of the new version keeps its state but is no longer
        scheduled. Concurrent deploys, the first included, all succeed, each with its
        own version number.
        """
        ...

    def deploy_if_changed(
        self,
        name: str,
        source: str,
        manifest: JsonValue,
        *,
        handlers: Sequence[HandlerSpec] = (),
    ) -> tuple[int, bool]:
        """`deploy`, unless `source` is already the current version's source byte for byte.

        Returns ``(version, deployed)``. The comparison and the deploy are one
        transaction under the workflow's lock, so concurrent calls with the same
        unchanged source deploy at most one version (on a first deploy, the caller that
        loses the race to create the workflow compares again and deploys nothing).
        """
        ...

    def get_workflow(self, name: str) -> WorkflowRecord:
        """The workflow's current version, paused flag and grants. `NotFound` if not deployed."""
        ...

    def get_workflow_version(self, name: str, version: int | None = None) -> WorkflowVersion:
        """Source, manifest and handlers of one version (the current one by default)."""
        ...

    def list_workflows(self) -> list[WorkflowRecord]:
        """Every deployed workflow, by name."""
        ...

    def pause_workflow(self, name: str, *, actor: str, reason: str | None = None) -> WorkflowRecord:
        """Stop new runs from beginning (`WorkflowPaused`); audited. Pausing twice is a no-op."""
        ...

    def resume_workflow(self, name: str, *, actor: str) -> WorkflowRecord:
        """Let runs begin again; audited."""
        ...

    def grant_permission(self, name: str, permission: str, *, actor: str) -> WorkflowRecord:
        """Grant `permission` (``"sheets.write"``) to the workflow; audited; idempotent."""
        ...

    def revoke_permission(self, name: str, permission: str, *, actor: str) -> WorkflowRecord:
        """Revoke `permission`; audited. `NotFound` if it was not granted."""
        ...

    # Handlers

    def get_handler(self, workflow: str, handler: str) -> HandlerRecord:
        """A handler's state, wakeAt and next run time. `NotFound` if never declared."""
        ...

    def list_handlers(self, workflow: str | None = None) -> list[HandlerRecord]:
        """Every handler the workflow ever declared, by name; of every workflow (by
        workflow, then name) when `workflow` is None."""
        ...

    def set_next_run_at(
        self, workflow: str, handler: str, next_run_at: dt.datetime | None
    ) -> HandlerRecord:
        """Set when a producer is next due (None: never, until set again)."""
        ...

    def set_wake_at(
        self, workflow: str, handler: str, wake_at: dt.datetime | None
    ) -> HandlerRecord:
        """Set or clear a consumer's wakeAt outside a run (`save_prepare_result` also sets it)."""
        ...

    # Events

    def publish(
        self, workflow: str, publication: Publication, *, created_by: str | None = None
    ) -> PublishResult:
        """Publish one event, idempotently per (workflow, topic, messageId).

        New: stored pending (`CREATED`). Existing and pending: title and payload
        are replaced, last write wins (`REPLACED`). Existing and reserved,
        consumed or skipped: nothing changes (`DUPLICATE`).
        """
        ...

    def get_event(self, event_id: str) -> Event:
        """The event with host id `event_id`. `NotFound` otherwise."""
        ...

    def pending_events(self, workflow: str, topic: str, *, limit: int) -> list[Event]:
        """Up to `limit` pending events of the topic, oldest first.

        Cost depends on `limit`, not on how many consumed events the topic holds.
        """
        ...

    def events_by_ids(self, workflow: str, topic: str, message_ids: Sequence[str]) -> list[Event]:
        """The events of the topic with these messageIds, in the order asked; unknown ids
        are left out. Any status."""
        ...

    def list_events(
        self,
        workflow: str,
        *,
        topic: str | None = None,
        status: EventStatus | None = None,
        limit: int | None = None,
    ) -> list[Event]:
        """Events of the workflow in publish order, optionally of one topic or status."""
        ...

    def skip_event(self, event_id: str, *, actor: str, reason: str | None = None) -> Event:
        """A person skips a pending event: it is never delivered; audited.

        `EventNotPending` if it is reserved, consumed or already skipped.
        """
        ...

    # Runs

    def begin_run(
        self,
        workflow: str,
        handler: str,
        kind: HandlerKind,
        *,
        input_state: JsonValue = None,
        retry_of: str | None = None,
        phase: RunPhase = RunPhase.PREPARING,
        version: int | None = None,
    ) -> RunRecord:
        """Create an active run of `handler` on `version` (the current one by default).

        Refused with `ActiveRunExists` while the workflow has an active run
        (the database enforces it too) and with `WorkflowPaused` while paused.
        A new run starts at ``preparing``. A retry (`retry_of`, a finished run of
        the same handler) may start at a later phase: it copies the prepare
        result and the known mutation result and takes over the reservations
        the old run still holds; a retry starting at ``preparing`` releases them
        instead (pending again, attempt + 1).
        """
        ...

    def get_run(self, run_id: str) -> RunRecord:
        """The run with id `run_id`. `NotFound` otherwise."""
        ...

    def list_runs(
        self,
        *,
        workflow: str | None = None,
        status: RunStatus | Collection[RunStatus] | None = None,
        limit: int | None = None,
        handler: str | None = None,
        retry_of: str | None = None,
        newest_first: bool = False,
    ) -> list[RunRecord]:
        """Runs in creation order (newest first with `newest_first`), at most `limit`,
        matching every filter given: the workflow, the status (one or any of several),
        the handler (of `workflow`) and the run retried.

        The scheduler asks these every planning step; a store answers them from an
        index, never by reading the run history."""
        ...

    def active_runs(self) -> list[RunRecord]:
        """Every active run (after a restart these are the runs that crashed)."""
        ...

    def save_prepare_result(self, run_id: str, result: PrepareResult) -> RunRecord:
        """Persist `result`, reserve every event it lists and move the run to ``prepared``.

        All or nothing: an unknown messageId raises `NotFound`, one that is not
        pending raises `EventNotPending`, both naming the offending ids. The
        consumer's wakeAt becomes `result.wake_at` (None clears it).
        """
        ...

    def advance_phase(self, run_id: str, phase: RunPhase) -> RunRecord:
        """Move an active run forward to ``mutating`` or ``emitting``.

        ``prepared``, ``mutated`` and ``committed`` are reached only through
        their own commit points; anything else is a `PhaseConflict`.
        """
        ...

    def set_run_status(
        self,
        run_id: str,
        status: RunStatus,
        *,
        error: str | None = None,
        failure: FailureKind | None = None,
        resume_at: dt.datetime | None = None,
        release_reservations: bool = False,
        logs: Sequence[str] = (),
        permission: str | None = None,
        trace: Sequence[PhaseTrace] = (),
    ) -> RunRecord:
        """Pause, fail, crash or resume a run; the phase never changes.

        ``active`` resumes a paused run. Finished runs (failed, crashed,
        committed) cannot change. With `release_reservations`, the events the
        run holds become pending again with attempt + 1; refused with
        `MutationConflict` once its mutation may have happened.

        Two facts travel with the run as fields: every call with status
        ``paused:transient`` adds one to `RunRecord.transient_failures` (never
        reset; a retry run starts at 0), and every call sets
        `RunRecord.waiting_permission` to `permission` (the permission a
        ``paused:approval`` run waits for; None clears it, as on resume).
        `logs` and `trace` (the phases run since the last commit point that took
        them) are appended to the run's, as by the two commits.
        """
        ...

    def commit_consumer_run(
        self,
        run_id: str,
        *,
        state: JsonValue | Unchanged = UNCHANGED,
        publishes: Sequence[Publication] = (),
        mutation_result: MutationResultValue | None = None,
        logs: Sequence[str] = (),
        trace: Sequence[PhaseTrace] = (),
    ) -> RunCommit:
        """Commit a consumer run in one transaction.

        Its reservations become consumed (skipped when the mutation was skipped),
        `state` becomes the handler state, `publishes` are published
        idempotently, and the run is committed. The run must be active at
        ``prepared``, ``mutated`` or ``emitting`` with its mutation settled.
        """
        ...

    def commit_producer_run(
        self,
        run_id: str,
        *,
        state: JsonValue | Unchanged = UNCHANGED,
        publishes: Sequence[Publication] = (),
        next_run_at: dt.datetime | None,
        logs: Sequence[str] = (),
        trace: Sequence[PhaseTrace] = (),
    ) -> RunCommit:
        """Commit a producer run: state, publishes, next due time and the run, together."""
        ...

    # The mutation ledger

    def record_mutation_intent(
        self,
        run_id: str,
        *,
        connector: str,
        operation: str,
        params: JsonValue,
        idempotency_key: str,
        ui_title: str | None = None,
    ) -> LedgerEntry:
        """Write the run's ledger entry as ``in_flight``; durable when this returns.

        The run must be an active consumer run at ``mutating``; a run has at
        most one entry (`MutationConflict`, enforced by the database too).
        """
        ...

    def record_mutation_applied(self, ledger_id: str, result: JsonValue) -> LedgerEntry:
        """The mutation took effect: entry ``applied``, run ``mutated`` with its result, together.

        From ``in_flight`` or ``needs_reconcile``.
        """
        ...

    def record_mutation_failed(self, ledger_id: str, *, error: str) -> LedgerEntry:
        """The mutation definitely did not happen: entry ``failed``. From in_flight or
        needs_reconcile."""
        ...

    def record_needs_reconcile(
        self, ledger_id: str, *, next_reconcile_at: dt.datetime, error: str | None = None
    ) -> LedgerEntry:
        """The outcome is uncertain: entry ``needs_reconcile``, due at `next_reconcile_at`.

        From ``in_flight`` (attempts stay 0) or ``needs_reconcile`` (a reconcile
        attempt answered retry: attempts + 1).
        """
        ...

    def record_mutation_indeterminate(
        self, ledger_id: str, *, error: str | None = None
    ) -> LedgerEntry:
        """Reconciliation gave up: entry ``indeterminate``; a person must resolve it."""
        ...

    def resolve_mutation(
        self,
        ledger_id: str,
        resolution: Resolution,
        *,
        actor: str,
        detail: str | None = None,
        result: JsonValue = None,
    ) -> LedgerEntry:
        """A person resolves an ``indeterminate`` or ``needs_reconcile`` mutation; audited.

        `HAPPENED`: entry applied with `result` (what reconciliation found, None
        when unknown), run ``mutated`` with the same result.
        `DIDNT_HAPPEN`: entry failed (a retry run may mutate again).
        `SKIP`: entry stays indeterminate, run ``emitting`` with mutation result
        skipped (its events become skipped on commit).
        """
        ...

    def get_ledger_entry(self, ledger_id: str) -> LedgerEntry:
        """The ledger entry `ledger_id`. `NotFound` otherwise."""
        ...

    def ledger_entry_for_run(self, run_id: str) -> LedgerEntry | None:
        """The run's ledger entry, or None when it recorded no mutation."""
        ...

    def list_ledger(
        self,
        *,
        workflow: str | None = None,
        status: LedgerStatus | None = None,
        limit: int | None = None,
    ) -> list[LedgerEntry]:
        """Ledger entries in creation order, optionally of one workflow and status."""
        ...

    def due_reconciliations(self, now: dt.datetime | None = None) -> list[LedgerEntry]:
        """Entries in ``needs_reconcile`` whose next attempt is due, earliest first."""
        ...

    # Scheduling queries

    def due_producers(self, now: dt.datetime | None = None) -> list[HandlerRecord]:
        """Producers of unpaused workflows' current versions with next_run_at <= now,
        earliest first."""
        ...

    def consumers_to_wake(self, now: dt.datetime | None = None) -> list[ConsumerWake]:
        """Consumers of unpaused workflows' current versions that have pending events in a
        subscribed topic, or whose wakeAt is due; by workflow and handler name."""
        ...

    # Audit

    def record_audit(
        self,
        *,
        actor: str,
        action: str,
        target: str,
        workflow: str | None = None,
        detail: JsonValue = None,
    ) -> AuditEntry:
        """Append an entry to the audit log (person actions the store does not perform itself)."""
        ...

    def audit_log(
        self,
        *,
        workflow: str | None = None,
        after_seq: int = 0,
        limit: int | None = None,
    ) -> list[AuditEntry]:
        """Audit entries with seq > `after_seq`, oldest first, optionally of one workflow."""
        ...

    # Leases

    def acquire_lease(self, workflow: str, owner: str, *, ttl: dt.timedelta) -> Lease | None:
        """Claim the workflow for `owner` until now + `ttl`; None while another owner holds it.

        An expired lease is taken over with a compare-and-swap (exactly one of
        several racing owners wins) and a new token. The owner's own live lease
        is renewed.
        """
        ...

    def heartbeat_lease(self, lease: Lease, *, ttl: dt.timedelta) -> Lease:
        """Extend a live lease to now + `ttl`. `LeaseLost` if it expired or was taken over."""
        ...

    def release_lease(self, lease: Lease) -> None:
        """Give the lease up. `LeaseLost` if it was already taken over."""
        ...

    def get_lease(self, workflow: str) -> Lease | None:
        """The current lease on the workflow (perhaps expired), or None."""
        ...

    def list_leases(self) -> list[Lease]:
        """Every lease row (perhaps expired), in no set order: one statement, whatever the
        history."""
        ...

    def reading(self) -> AbstractContextManager[None]:
        """Answer every query this thread makes inside the block from one read
        transaction: one snapshot, one round trip to begin and end it. Commit points
        inside the block run in transactions of their own, and the block's queries
        need not see them. A store without snapshots may make this a no-op."""
        ...

    def close(self) -> None:
        """Release connections; the store must not be used afterwards."""
        ...


@runtime_checkable
class SupportsFewerCheckpoints(Protocol):
    """A store that merges a consumer run's checkpoints (docs/execution.md): the run, its
    prepare result and its intent in one transaction; an applied mutation and the commit
    in another. Every `TransactionalStore` is one; for a `Store` that is not, the runtime
    takes the five checkpoints of `Store` alone."""

    def begin_consumer_run(
        self,
        workflow: str,
        handler: str,
        *,
        run_id: str,
        prepare_result: PrepareResult | None,
        phase: RunPhase = RunPhase.PREPARED,
        intent: MutationIntent | None = None,
        input_state: JsonValue = None,
        version: int | None = None,
    ) -> BegunRun:
        """`begin_run` + `save_prepare_result` (+ `record_mutation_intent`), in one transaction.

        Refused as `begin_run` refuses (paused workflow, another active run, unknown
        handler) and as `save_prepare_result` refuses (events not pending), writing
        nothing. The run gets id `run_id` and ends at `phase` (``prepared`` or
        ``emitting``), or at ``mutating`` with its ``in_flight`` entry when `intent` is
        given; durable when this returns.
        """
        ...

    def record_mutation_applied_run(self, ledger_id: str, result: JsonValue) -> RunRecord:
        """`record_mutation_applied`, answering with the run it moved to ``mutated``."""
        ...

    def commit_applied_consumer_run(
        self,
        run_id: str,
        *,
        ledger_id: str,
        result: JsonValue,
        state: JsonValue | Unchanged = UNCHANGED,
        publishes: Sequence[Publication] = (),
        logs: Sequence[str] = (),
        trace: Sequence[PhaseTrace] = (),
    ) -> RunCommit:
        """`record_mutation_applied` + `commit_consumer_run`, in one transaction: the run's
        unsettled entry `ledger_id` becomes ``applied`` with `result`, and the run commits
        with ``{status: "applied", result}``."""
        ...


@runtime_checkable
class SupportsFaultInjection(Protocol):
    """A store that calls `fault_hook` between the writes of its commit points."""

    fault_hook: FaultHook | None


@runtime_checkable
class SupportsPeekCost(Protocol):
    """A store that can report the work a `pending_events` call does."""

    def peek_cost(self, workflow: str, topic: str, *, limit: int) -> int:
        """Rows (or index entries, or VM steps) examined by ``pending_events`` with these
        arguments; the conformance suite checks it does not grow with consumed events."""
        ...


@runtime_checkable
class SupportsCounts(Protocol):
    """A store that counts events and runs by status without reading their rows."""

    def count_by_status(self, workflow: str | None = None) -> StatusCounts:
        """Events and runs by workflow and status (of one workflow, when given); the SQL
        store answers from covering indexes, so the cost follows the index, not the rows."""
        ...


@runtime_checkable
class SupportsBulkLoad(Protocol):
    """A store that can load many events at once (backlog tests and benchmarks)."""

    def bulk_load_events(self, workflow: str, events: Sequence[Event]) -> None:
        """Insert `events` as given (status included), bypassing publish; one transaction.

        Raises `ValueError` naming the first event of another workflow than `workflow`, and
        loads nothing, when `events` holds one."""
        ...


@runtime_checkable
class SupportsPages(Protocol):
    """A store that reads events, runs and ledger entries a page at a time, newest first.

    Keyset pagination: `before` is the id of the last row of the previous page
    (None for the first page), and a page holds the up to `limit` rows that
    were created before it and match the filters. A row created while a person
    pages never shifts the pages after it. An unknown `before` is `NotFound`.
    The cost of a page depends on `limit`, not on how many rows the store holds.
    """

    def page_events(
        self,
        workflow: str,
        *,
        topic: str | None = None,
        status: EventStatus | None = None,
        created_by: str | None = None,
        before: str | None = None,
        limit: int,
    ) -> list[Event]:
        """Events of the workflow, newest first, optionally of one topic, status or
        publishing run."""
        ...

    def page_runs(
        self,
        *,
        workflow: str | None = None,
        status: RunStatus | None = None,
        before: str | None = None,
        limit: int,
    ) -> list[RunRecord]:
        """Runs, newest first, optionally of one workflow and status."""
        ...

    def page_ledger(
        self,
        *,
        workflow: str | None = None,
        status: LedgerStatus | None = None,
        before: str | None = None,
        limit: int,
    ) -> list[LedgerEntry]:
        """Ledger entries, newest first, optionally of one workflow and status."""
        ...

    def runs_by_ids(self, run_ids: Sequence[str]) -> list[RunRecord]:
        """The runs with these ids, in the order asked; unknown ids are left out."""
        ...

    def ledger_for_runs(self, run_ids: Sequence[str]) -> list[LedgerEntry]:
        """The ledger entries of these runs (runs without one are left out), any order."""
        ...

    def events_published_by(self, workflow: str, run_ids: Sequence[str]) -> list[Event]:
        """The events of the workflow that these runs published, in publish order."""
        ...
