"""`Planner`: every task that is due now, from the store alone, in the order to run them.

The rules (docs/scheduler.md):

- a paused workflow gets no work;
- a workflow with an active run gets no new work; an active run no worker
  holds a lease for is an orphan of a stopped host and is recovered first;
- a handler with an unfinished run (paused for a backoff, a permission, a
  reconciliation or a person) is not started again: that run continues when
  its wait is over (``resume_at``, ``next_reconcile_at``, a person's action);
- a handler whose latest run failed (logic or internal) waits for a fix: a new
  version of the workflow retries it, or a person does (``keep resolve``);
- a cron producer runs only at its fire times: the "due now" a deploy gives
  every producer is moved to its next fire time (an interval producer runs
  at once);
- consumers (oldest pending event or due wakeAt first) before producers
  (earliest ``next_run_at`` first); every trigger of a handler coalesces into
  one task;
- a consumer that looked at its pending events and reserved none is not woken
  again for the same events: only a new or changed event or its wakeAt wakes it.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Hashable

from croniter import croniter

from keep_sdk.contract.durable import Invocation
from keep_sdk.contract.workflow import CronSchedule, WorkflowManifest
from keep_sdk.model import Event, EventStatus, HandlerKind, LedgerStatus, RunRecord, RunStatus
from keep_sdk.runtime import next_run_at
from keep_sdk.scheduler._tasks import Task, TaskKind
from keep_sdk.stores import (
    ConsumerWake,
    HandlerRecord,
    Lease,
    Store,
    SupportsDurable,
    WakeReason,
    WorkflowRecord,
)

__all__ = [
    "Planner",
    "QuietConsumers",
    "is_superseded",
]

_WAITING = (RunStatus.PAUSED_TRANSIENT, RunStatus.PAUSED_APPROVAL, RunStatus.PAUSED_RECONCILIATION)
_FAILED = (RunStatus.FAILED_LOGIC, RunStatus.FAILED_INTERNAL)
_UNFINISHED = (RunStatus.ACTIVE, *_WAITING, *_FAILED)
_NEXT_POLLS = 20
"""Due polls read for the next due time: enough that a few claimed by dead workers (due
when their claim expires) do not hide the next free one."""
"""The runs a planning step reads: one indexed query, whatever the history."""

HandlerKey = tuple[str, str]


class QuietConsumers:
    """Consumers that chose to reserve nothing, and the pending events they saw then.

    Remembered per process, and recovered from the store in a new process (a
    second ``keep run --until-idle``, a restarted worker): a consumer whose latest
    run committed without reserving anything is quiet while every pending event of
    its topics was last changed before that run began. A consumer is therefore
    not woken again for the same events, in this process or the next.
    """

    def __init__(self, store: Store) -> None:
        self.store = store
        self._seen: dict[HandlerKey, Hashable] = {}

    def fingerprint(self, workflow: str, subscribe: list[str]) -> Hashable:
        """The pending events of the subscribed topics: ids and last change times."""
        return tuple(
            (topic, tuple((e.id, e.updated_at) for e in self._pending(workflow, topic)))
            for topic in sorted(subscribe)
        )

    def _pending(self, workflow: str, topic: str) -> list[Event]:
        return list(self.store.list_events(workflow, topic=topic, status=EventStatus.PENDING))

    def observe(self, run: RunRecord) -> None:
        """Remember (or forget) a consumer after one of its runs ended."""
        if run.kind is not HandlerKind.CONSUMER:
            return
        key = (run.workflow, run.handler)
        reserved = run.prepare_result is not None and bool(run.prepare_result.reservations)
        if run.status is RunStatus.COMMITTED and not reserved:
            handler = self.store.get_handler(run.workflow, run.handler)
            self._seen[key] = self.fingerprint(run.workflow, handler.subscribe)
        else:
            self._seen.pop(key, None)

    def _declined_in_store(self, handler: HandlerRecord) -> bool:
        """Whether the handler's latest stored run declined every event pending now."""
        latest = _latest_run(self.store, handler.workflow, handler.name)
        if (
            latest is None
            or latest.kind is not HandlerKind.CONSUMER
            or latest.status is not RunStatus.COMMITTED
            or latest.prepare_result is None
            or latest.prepare_result.reservations
        ):
            return False
        return all(
            event.updated_at < latest.created_at
            for topic in handler.subscribe
            for event in self._pending(handler.workflow, topic)
        )

    def is_quiet(self, handler: HandlerRecord) -> bool:
        """True while the consumer's pending events are exactly those it declined."""
        key = (handler.workflow, handler.name)
        if key not in self._seen:
            if not self._declined_in_store(handler):
                return False
            self._seen[key] = self.fingerprint(handler.workflow, handler.subscribe)
            return True
        if self._seen[key] == self.fingerprint(handler.workflow, handler.subscribe):
            return True
        del self._seen[key]
        return False


class _Runnable:
    """The workflows that may get work in one planning step, read from the store only if
    a task source that does not exclude paused workflows itself has rows: consumers to
    wake and due producers come from queries that already do, so an idle step does not
    read every workflow."""

    def __init__(self, store: Store) -> None:
        self.store = store
        self.busy: set[str] = set()
        """Workflows with an active run: no new work."""
        self._records: dict[str, WorkflowRecord] | None = None

    def record(self, workflow: str) -> WorkflowRecord | None:
        """The workflow's record (read with every other the first time one is asked)."""
        if self._records is None:
            self._records = {w.name: w for w in self.store.list_workflows()}
        return self._records.get(workflow)

    def __contains__(self, workflow: object) -> bool:
        if not isinstance(workflow, str) or workflow in self.busy:
            return False
        found = self.record(workflow)
        return found is not None and not found.paused


class Planner:
    """Computes the due tasks from the store.

    It keeps only what never changes (which failed runs were superseded, the
    manifests of deployed versions) and writes one thing: a cron producer's
    deploy-time "due now" becomes its next fire time.
    """

    def __init__(self, store: Store, quiet: QuietConsumers) -> None:
        self.store = store
        self.quiet = quiet
        self._superseded: set[str] = set()
        self._manifests: dict[tuple[str, int], WorkflowManifest] = {}

    def tasks(self, now: dt.datetime) -> list[Task]:
        """Every task due at `now`, best first, read in one snapshot of the store."""
        return self.plan(now)[0]

    def plan(self, now: dt.datetime) -> tuple[list[Task], list[Lease]]:
        """The tasks due at `now`, best first, and every lease row, read in one snapshot
        (one statement more than `tasks`: the workers divide the work by the leases)."""
        postponed: list[tuple[HandlerRecord, dt.datetime]] = []
        with self.store.reading():
            tasks = self._tasks(now, postponed)
            leases = self.store.list_leases()
        for handler, fire in postponed:
            self.store.set_next_run_at(handler.workflow, handler.name, fire)
        return tasks, leases

    def _tasks(
        self, now: dt.datetime, postponed: list[tuple[HandlerRecord, dt.datetime]]
    ) -> list[Task]:
        runnable = _Runnable(self.store)
        tasks: list[Task] = []
        busy: set[str] = set()
        unfinished: dict[RunStatus, list[RunRecord]] = {s: [] for s in _UNFINISHED}
        for run in self.store.list_runs(status=_UNFINISHED):
            unfinished[run.status].append(run)
        for run in unfinished[RunStatus.ACTIVE]:
            busy.add(run.workflow)
            if run.workflow in runnable:
                tasks.append(
                    Task(
                        kind=TaskKind.RECOVER,
                        workflow=run.workflow,
                        due_at=run.updated_at,
                        reason=f"run {run.id} of {run.handler} is active",
                    )
                )
        runnable.busy |= busy
        blocked: set[HandlerKey] = set()
        tasks += self._waiting_runs(now, unfinished, runnable, blocked)
        tasks += self._failed_runs(unfinished, runnable, blocked)
        tasks += self._reconciliations(now, runnable)
        tasks += self._deliveries(runnable)
        tasks += self._polls(now, runnable)
        tasks += self._timeouts(now, runnable)
        tasks += self._consumers(now, runnable, blocked)
        tasks += self._producers(now, runnable, blocked, postponed)
        unique: dict[tuple[str, str | None, TaskKind, str | None], Task] = {}
        for task in sorted(tasks, key=Task.sort_key):
            unique.setdefault((task.workflow, task.handler, task.kind, task.run_id), task)
        return list(unique.values())

    def next_due(self, now: dt.datetime) -> dt.datetime | None:
        """The earliest future time at which a schedule, wakeAt, backoff or reconciliation
        falls due (None when nothing is scheduled)."""
        with self.store.reading():
            return self._next_due(now)

    def _next_due(self, now: dt.datetime) -> dt.datetime | None:
        times: list[dt.datetime] = []
        current = {w.name: w.version for w in self.store.list_workflows() if not w.paused}
        for handler in self.store.list_handlers():
            if current.get(handler.workflow) == handler.version:
                times += [t for t in (handler.next_run_at, handler.wake_at) if t is not None]
        for run in self.store.list_runs(status=RunStatus.PAUSED_TRANSIENT):
            if run.resume_at is not None:
                times.append(run.resume_at)
        for entry in self.store.list_ledger(status=LedgerStatus.NEEDS_RECONCILE):
            if entry.next_reconcile_at is not None:
                times.append(entry.next_reconcile_at)
        if isinstance(self.store, SupportsDurable):
            upcoming = self.store.due_polls(now + dt.timedelta(days=1), limit=_NEXT_POLLS)
            times += [t for i in upcoming if (t := _poll_time(i)) is not None]
        future = [t for t in times if t > now]
        return min(future, default=None)

    # Unfinished runs

    def _waiting_runs(
        self,
        now: dt.datetime,
        unfinished: dict[RunStatus, list[RunRecord]],
        runnable: _Runnable,
        blocked: set[HandlerKey],
    ) -> list[Task]:
        tasks = []
        for status in _WAITING:
            for run in unfinished[status]:
                blocked.add((run.workflow, run.handler))
                due = run.resume_at or now
                if status is RunStatus.PAUSED_TRANSIENT and run.workflow in runnable and due <= now:
                    tasks.append(
                        Task(
                            kind=TaskKind.RESUME,
                            workflow=run.workflow,
                            handler=run.handler,
                            run_id=run.id,
                            due_at=due,
                            reason=f"backoff after a transient failure ended ({run.error})",
                            producer_side=run.kind is HandlerKind.PRODUCER,
                        )
                    )
        return tasks

    def _failed_runs(
        self,
        unfinished: dict[RunStatus, list[RunRecord]],
        runnable: _Runnable,
        blocked: set[HandlerKey],
    ) -> list[Task]:
        tasks = []
        for status in _FAILED:
            for run in unfinished[status]:
                if run.id in self._superseded:
                    continue
                if self._is_superseded(run):
                    self._superseded.add(run.id)
                    continue
                blocked.add((run.workflow, run.handler))
                current = runnable.record(run.workflow)
                if (
                    current is not None
                    and run.workflow in runnable
                    and current.version > run.workflow_version
                ):
                    tasks.append(
                        Task(
                            kind=TaskKind.RETRY,
                            workflow=run.workflow,
                            handler=run.handler,
                            run_id=run.id,
                            due_at=run.updated_at,
                            reason=f"version {current.version} was deployed after run {run.id} "
                            f"failed on version {run.workflow_version}",
                            producer_side=run.kind is HandlerKind.PRODUCER,
                        )
                    )
        return tasks

    def _is_superseded(self, failed: RunRecord) -> bool:
        return is_superseded(self.store, failed)

    # Reconciliation

    def _reconciliations(self, now: dt.datetime, runnable: _Runnable) -> list[Task]:
        return [
            Task(
                kind=TaskKind.RECONCILE,
                workflow=entry.workflow,
                handler=entry.handler,
                run_id=entry.run_id,
                ledger_id=entry.id,
                due_at=entry.next_reconcile_at or now,
                reason=f"outcome of ctx.{entry.connector}.{entry.operation} is unknown",
            )
            for entry in self.store.due_reconciliations(now)
            if entry.workflow in runnable
        ]

    def _deliveries(self, runnable: _Runnable) -> list[Task]:
        if not isinstance(self.store, SupportsDurable):
            return []
        invocations: dict[str, Invocation] = {}
        tasks = []
        for notification in self.store.deliverable_notifications():
            if notification.workflow not in runnable:
                continue
            invocation = invocations.get(notification.invocation_id)
            if invocation is None:
                invocation = self.store.get_invocation(notification.invocation_id)
                invocations[invocation.id] = invocation
            tasks.append(
                Task(
                    kind=TaskKind.DELIVER,
                    workflow=notification.workflow,
                    handler=invocation.handler,
                    run_id=invocation.run_id,
                    notification_id=notification.id,
                    due_at=notification.received_at,
                    reason=f"the result of ctx.{invocation.connector}.{invocation.operation} "
                    "arrived",
                )
            )
        return tasks

    def _polls(self, now: dt.datetime, runnable: _Runnable) -> list[Task]:
        if not isinstance(self.store, SupportsDurable):
            return []
        return [
            _invocation_task(TaskKind.POLL, i, i.next_poll_at or now, "is due for a poll")
            for i in self.store.due_polls(now)
            if i.workflow in runnable
        ]

    def _timeouts(self, now: dt.datetime, runnable: _Runnable) -> list[Task]:
        if not isinstance(self.store, SupportsDurable):
            return []
        return [
            _invocation_task(TaskKind.TIMEOUT, i, i.timeout_at or now, "got no result in time")
            for i in self.store.expired_invocations(now)
            if i.workflow in runnable
        ]

    # Triggers

    def _consumers(
        self, now: dt.datetime, runnable: _Runnable, blocked: set[HandlerKey]
    ) -> list[Task]:
        tasks = []
        for wake in self.store.consumers_to_wake(now):
            if wake.workflow in runnable.busy or (wake.workflow, wake.handler) in blocked:
                continue
            handler = self.store.get_handler(wake.workflow, wake.handler)
            wake_due = handler.wake_at is not None and handler.wake_at <= now
            if wake.reason is WakeReason.PENDING_EVENTS and not wake_due:
                if self.quiet.is_quiet(handler):
                    continue
                due, reason = self._oldest_pending(handler, now), "new events are pending"
            elif wake.reason is WakeReason.PENDING_EVENTS:
                due, reason = (
                    min(self._oldest_pending(handler, now), _wake(wake, now)),
                    ("events are pending and its wakeAt is due"),
                )
            else:
                due, reason = _wake(wake, now), "its wakeAt is due"
            tasks.append(
                Task(
                    kind=TaskKind.CONSUMER,
                    workflow=wake.workflow,
                    handler=wake.handler,
                    due_at=due,
                    reason=reason,
                )
            )
        return tasks

    def _oldest_pending(self, handler: HandlerRecord, now: dt.datetime) -> dt.datetime:
        oldest = [
            events[0].created_at
            for topic in handler.subscribe
            if (events := self.store.pending_events(handler.workflow, topic, limit=1))
        ]
        return min(oldest, default=now)

    def _producers(
        self,
        now: dt.datetime,
        runnable: _Runnable,
        blocked: set[HandlerKey],
        postponed: list[tuple[HandlerRecord, dt.datetime]],
    ) -> list[Task]:
        tasks = []
        for handler in self.store.due_producers(now):
            if handler.workflow in runnable.busy or (handler.workflow, handler.name) in blocked:
                continue
            due = handler.next_run_at or now
            cron = self._cron(handler)
            if cron is not None and not croniter.match(cron, due):
                postponed.append((handler, next_run_at(CronSchedule(cron=cron), now)))
                continue
            tasks.append(
                Task(
                    kind=TaskKind.PRODUCER,
                    workflow=handler.workflow,
                    handler=handler.name,
                    due_at=due,
                    reason="its schedule is due",
                    producer_side=True,
                )
            )
        return tasks

    def _cron(self, handler: HandlerRecord) -> str | None:
        """The producer's cron expression, or None for an interval schedule."""
        key = (handler.workflow, handler.version)
        if key not in self._manifests:
            stored = self.store.get_workflow_version(handler.workflow, handler.version)
            self._manifests[key] = WorkflowManifest.model_validate(stored.manifest)
        for producer in self._manifests[key].producers:
            if producer.name == handler.name and isinstance(producer.schedule, CronSchedule):
                return producer.schedule.cron
        return None


def is_superseded(store: Store, failed: RunRecord) -> bool:
    """Whether a later run of the failed run's handler exists (a retry, a fix, a person's
    retry): then the failure no longer holds the handler back."""
    latest = _latest_run(store, failed.workflow, failed.handler)
    if latest is not None and latest.id != failed.id:
        return True
    return bool(store.list_runs(workflow=failed.workflow, retry_of=failed.id, limit=1))


def _latest_run(store: Store, workflow: str, handler: str) -> RunRecord | None:
    found = store.list_runs(workflow=workflow, handler=handler, newest_first=True, limit=1)
    return found[0] if found else None


def _wake(wake: ConsumerWake, now: dt.datetime) -> dt.datetime:
    return wake.wake_at or now


def _poll_time(invocation: Invocation) -> dt.datetime | None:
    """When `invocation` can next be polled: its ``next_poll_at``, or the end of the claim
    that holds it (a worker that died while polling holds it until then)."""
    due = invocation.next_poll_at
    if due is None or invocation.claim_until is None:
        return due
    return max(due, invocation.claim_until)


def _invocation_task(kind: TaskKind, invocation: Invocation, due: dt.datetime, what: str) -> Task:
    return Task(
        kind=kind,
        workflow=invocation.workflow,
        handler=invocation.handler,
        run_id=invocation.run_id,
        invocation_id=invocation.id,
        due_at=due,
        reason=f"ctx.{invocation.connector}.{invocation.operation} {what}",
    )
