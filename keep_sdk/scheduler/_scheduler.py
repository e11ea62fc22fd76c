"""`Scheduler`: decides when runs happen and carries them out through the runtime.

One scheduler is one worker. Any number of workers may share a store: each
works on a workflow only while it holds the workflow's lease, so a workflow
never runs on two workers at once, and when a worker dies its leases expire
and another worker recovers its active runs and carries on. The workers divide
the due work (`Share`): none tries a workflow another live worker holds, and
none holds more than its quota of the workflows with due work. A consumer with
a backlog is drained (`Drain`): run again without a new plan while it has
pending events, its lease is fresh and the budget lasts.
"""

from __future__ import annotations

import datetime as dt
import functools
import os
import socket
import threading
import time
import uuid
from collections.abc import Callable
from contextlib import suppress

from keep_sdk.errors import (
    ActionRefused,
    ConfigurationError,
    InternalError,
    NotFound,
    StoreConflict,
)
from keep_sdk.model import RunRecord
from keep_sdk.runtime import Runtime
from keep_sdk.scheduler._drain import DEFAULT_DRAIN_RUNS, DEFAULT_DRAIN_S, Drain
from keep_sdk.scheduler._holders import holder_is_dead
from keep_sdk.scheduler._lanes import Lanes
from keep_sdk.scheduler._leases import LeaseKeeper
from keep_sdk.scheduler._planner import Planner, QuietConsumers
from keep_sdk.scheduler._retry import (
    WORKER_RETRY,
    Outage,
    OutageWatcher,
    RetryPolicy,
    is_transient,
)
from keep_sdk.scheduler._share import Share
from keep_sdk.scheduler._tasks import Activity, Task, TaskKind
from keep_sdk.stores import Lease

__all__ = [
    "DEFAULT_LEASE_TTL_S",
    "Scheduler",
    "default_worker_name",
]

DEFAULT_LEASE_TTL_S = 30.0
"""How long a worker's claim on a workflow lasts without a heartbeat."""


_WAKE_SLICE_S = 0.5
"""How long one wait for an inbox wake lasts before `stop` is checked again."""

_MAX_ERROR_WAIT_S = 30.0
"""The longest a worker waits after an error before it tries again."""

_ALIVE_FOR_S = 1.0
"""How long a lease holder found alive is not looked up again."""


def _not_idle(max_steps: int, last: Activity) -> InternalError:
    return InternalError(
        f"the scheduler did not become idle after {max_steps} steps; last: {last.describe()}"
    )


def default_worker_name() -> str:
    """``host:pid:random``: unique among live workers, readable in ``keep status``."""
    return f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:6]}"


class Scheduler:
    """Runs whatever is due under per-workflow leases: one task at a time, or with
    `concurrency` > 1 the tasks of up to that many workflows at once (`Lanes`; still one
    active run per workflow).

    `clock` defaults to the runtime's clock, so a fake clock moves schedules,
    wakeAt, backoffs and reconciliation together. `lease_ttl_s` bounds how long
    a killed worker's workflows wait before another worker takes them over.
    `drain_runs` and `drain_s` bound a drain (`Drain`): how many runs of one
    consumer, and how many seconds, may follow a plan before the planner looks
    again (``drain_runs=1`` plans before every run).
    """

    def __init__(
        self,
        runtime: Runtime,
        *,
        worker: str | None = None,
        lease_ttl_s: float = DEFAULT_LEASE_TTL_S,
        clock: Callable[[], dt.datetime] | None = None,
        drain_runs: int = DEFAULT_DRAIN_RUNS,
        drain_s: float = DEFAULT_DRAIN_S,
        concurrency: int = 1,
    ) -> None:
        if concurrency < 1:
            raise ConfigurationError(
                f"a worker's concurrency is the number of workflows it runs at once: "
                f"at least 1, not {concurrency}"
            )
        self.runtime = runtime
        self.concurrency = concurrency
        self._lanes = Lanes(concurrency) if concurrency > 1 else None
        self._listening = False
        self.store = runtime.store
        self.clock = clock or runtime.now
        self.worker = worker or default_worker_name()
        self.lease_ttl_s = lease_ttl_s
        self.drain_runs = drain_runs
        self.drain_s = drain_s
        self._drain: Drain | None = None
        self.leases = LeaseKeeper(
            self.store, self.worker, ttl=dt.timedelta(seconds=lease_ttl_s), clock=self.clock
        )
        self.quiet = QuietConsumers(self.store)
        self.planner = Planner(self.store, self.quiet)
        self._dead: set[tuple[str, dt.datetime]] = set()
        self._alive_until: dict[str, float] = {}

    def due(self) -> list[Task]:
        """The tasks due now, best first (whether or not this worker could lease them)."""
        return self.planner.tasks(self.clock())

    def next_due(self) -> dt.datetime | None:
        """When the next schedule, wakeAt, backoff or reconciliation falls due."""
        return self.planner.next_due(self.clock())

    def step(self) -> Activity | None:
        """Carry out the best due task this worker can lease; None when there is none.

        Leases of workflows that have no due work are released first, so other
        workers (and a person's actions) can take them, and so are those over this
        worker's quota (`Share`). Workflows another live worker holds are not tried.
        While the consumer run last is being drained (`Drain`) it runs again without
        a plan.
        """
        drained = self._drained()
        if drained is not None:
            return drained
        now, wall = self.clock(), time.monotonic()
        mine, holding, quota = self._mine(now, frozenset())
        for task in mine:
            if task.workflow not in holding and len(holding) >= quota:
                continue
            if self.leases.claim(task.workflow) is None:
                continue
            holding.add(task.workflow)
            try:
                activity = self._perform(task)
            except (StoreConflict, ActionRefused):
                continue
            if activity.run is not None:
                self._drain = Drain.after(self.store, task, activity.run, now, wall)
            return activity
        return None

    def _mine(self, now: dt.datetime, busy: frozenset[str]) -> tuple[list[Task], set[str], int]:
        """Plan: the due tasks this worker may try, best first, the workflows it holds
        within its quota, and the quota. Leases of workflows without due work (or over the
        quota) are released, but never those of the `busy` workflows a lane works on."""
        tasks, leases = self.planner.plan(now)
        share = Share(self.worker, leases, now, is_dead=self._holder_is_dead)
        mine = share.mine(tasks)
        quota = share.quota(tasks)
        self.leases.release_all(keep={task.workflow for task in mine} | busy)
        held = [w for w in dict.fromkeys(t.workflow for t in mine) if w in self.leases.held]
        for workflow in held[quota:]:
            if workflow not in busy:
                self.leases.release(workflow)
        return mine, set(held[:quota]) | busy, quota

    def _drained(self) -> Activity | None:
        """The next run of the consumer being drained; None when the drain is over (then
        the caller plans)."""
        drain, self._drain = self._drain, None
        if drain is None:
            return None
        activity, self._drain = self._drain_once(drain)
        return activity

    def _drain_once(self, drain: Drain) -> tuple[Activity | None, Drain | None]:
        """The next run of `drain`'s consumer and the drain that may follow it; (None, None)
        when the drain is over. Nothing is begun unless the lease is fresh and work is
        pending."""
        if not drain.within_budget(self.clock(), runs=self.drain_runs, seconds=self.drain_s):
            return None, None
        if not self.leases.fresh(drain.task.workflow) or not drain.pending(self.store):
            return None, None
        try:
            activity = self._perform(drain.task)
        except (StoreConflict, ActionRefused, NotFound):
            return None, None
        if activity.run is not None and drain.continues_after(activity.run):
            return activity, drain
        return activity, None

    def _dispatch(self, lanes: Lanes) -> int:
        """Plan, and start each due task this worker can lease in a free lane, one per
        workflow not already in a lane; how many were started."""
        if lanes.full():
            return 0
        now, wall = self.clock(), time.monotonic()
        busy = lanes.busy
        mine, holding, quota = self._mine(now, busy)
        started: set[str] = set()
        for task in mine:
            if lanes.full():
                break
            if task.workflow in busy or task.workflow in started:
                continue
            if task.workflow not in holding and len(holding) >= quota:
                continue
            if self.leases.claim(task.workflow) is None:
                continue
            holding.add(task.workflow)
            started.add(task.workflow)
            lanes.start(task.workflow, functools.partial(self._lane, task, now, wall))
        return len(started)

    def _lane(self, task: Task, planned: dt.datetime, wall: float) -> list[Activity]:
        """`task`, and the drain that may follow it, in a lane: what was done."""
        try:
            activity = self._perform(task)
        except (StoreConflict, ActionRefused):
            return []
        done = [activity]
        drain = (
            Drain.after(self.store, task, activity.run, planned, wall)
            if activity.run is not None
            else None
        )
        while drain is not None:
            drained, drain = self._drain_once(drain)
            if drained is None:
                break
            done.append(drained)
        return done

    def _turn(self, lanes: Lanes) -> tuple[list[Activity], bool]:
        """One turn of a worker with lanes: what finished lanes did, and whether nothing is
        due or running (then the caller sleeps). Waits for a lane when all that is due is
        already in one."""
        finished = lanes.harvest()
        started = self._dispatch(lanes)
        if finished or started:
            return finished, False
        if lanes.idle():
            return [], True
        lanes.wait(_WAKE_SLICE_S)
        return [], False

    def _holder_is_dead(self, lease: Lease) -> bool:
        """Whether the lease's holder is provably dead (remembered: the dead stay dead)."""
        key = (lease.owner, lease.acquired_at)
        if key in self._dead:
            return True
        if self._alive_until.get(lease.owner, 0.0) > time.monotonic():
            return False
        if holder_is_dead(lease.owner, lease.acquired_at):
            self._dead.add(key)
            return True
        self._alive_until[lease.owner] = time.monotonic() + _ALIVE_FOR_S
        return False

    def run_until_idle(self, *, max_steps: int = 10_000) -> list[Activity]:
        """Step until nothing is due at the clock's current time; return what was done.

        Raises `InternalError` after `max_steps` steps: some handler keeps
        finding work, which is a bug worth a loud failure, not a hang.
        """
        done: list[Activity] = []
        lanes = self._lanes
        if lanes is not None:
            try:
                while True:
                    finished, idle = self._turn(lanes)
                    done.extend(finished)
                    if idle:
                        return done
                    if len(done) >= max_steps:
                        raise _not_idle(max_steps, done[-1])
            except BaseException:
                lanes.settle()
                raise
        while (activity := self.step()) is not None:
            done.append(activity)
            if len(done) >= max_steps:
                raise _not_idle(max_steps, activity)
        return done

    def run_forever(
        self,
        *,
        stop: threading.Event | None = None,
        poll_s: float = 1.0,
        on_activity: Callable[[Activity], None] | None = None,
        on_idle: Callable[[], None] | None = None,
        on_error: Callable[[Exception], None] | None = None,
        on_outage: Callable[[Exception], None] | None = None,
        on_recovery: Callable[[float], None] | None = None,
        retry: RetryPolicy = WORKER_RETRY,
        watcher: OutageWatcher | None = None,
    ) -> None:
        """Step until `stop` is set, sleeping while nothing is due.

        Sleeps until the next due time, at most `poll_s` (other processes may
        publish or act meanwhile), or until the store's inbox wakes it. Heartbeats
        keep the held leases and the presence row alive on a thread; they are
        released on the way out.

        Without `on_error`, an error escaping a step stops the loop. With it, the
        worker never stops on a store error: a transient one (`is_transient`: the
        connection lost, the server restarting, a terminated backend) is an outage,
        retried after `retry`'s delay for as long as it lasts, reported once to
        `on_outage` when it begins and to `on_recovery` (its length in seconds) when
        a whole step, planning and the idle wait included, works again (without
        `on_outage`, each failure goes to `on_error`); any other error goes to
        `on_error` and the worker carries on after `poll_s`, doubling the wait
        while errors repeat (at most 30 s). A `ConfigurationError` always stops it.
        `watcher` hears every transient failure, each outage's beginning and its recovery
        (`OutageWatcher`; the metrics of ``keep worker --metrics-port``).
        """
        stop = stop or threading.Event()
        outage = Outage(retry, watcher)
        failures = 0
        lanes = self._lanes
        try:
            with suppress(Exception):
                self.leases.announce()
            with self.leases.heartbeats(max(0.05, self.lease_ttl_s / 3), retry):
                while not stop.is_set():
                    try:
                        activities, idle = self._one_turn(lanes)
                        if idle:
                            if on_idle is not None:
                                on_idle()
                            self._idle(stop, self._sleep_s(poll_s))
                    except ConfigurationError:
                        raise
                    except Exception as exc:
                        if on_error is None:
                            raise
                        if is_transient(exc):
                            began, pause = outage.failed()
                            if on_outage is None:
                                on_error(exc)
                            elif began:
                                on_outage(exc)
                            stop.wait(pause)
                            continue
                        on_error(exc)
                        failures += 1
                        stop.wait(min(_MAX_ERROR_WAIT_S, poll_s * 2 ** (failures - 1)))
                        continue
                    failures = 0
                    lasted = outage.ended()
                    if lasted is not None and on_recovery is not None:
                        on_recovery(lasted)
                    if on_activity is not None:
                        for activity in activities:
                            on_activity(activity)
                if lanes is not None:
                    for activity in lanes.settle():
                        if on_activity is not None:
                            on_activity(activity)
        finally:
            if lanes is not None:
                lanes.settle()
            with suppress(Exception):
                self.leases.release_all()
            with suppress(Exception):
                self.leases.withdraw()

    def _one_turn(self, lanes: Lanes | None) -> tuple[list[Activity], bool]:
        if lanes is not None:
            return self._turn(lanes)
        activity = self.step()
        return ([], True) if activity is None else ([activity], False)

    def close(self) -> None:
        """Let every lane finish and end its thread; release every lease this worker holds,
        and its presence row (a store that cannot be reached now is left to let them
        expire)."""
        if self._lanes is not None:
            self._lanes.close()
        with suppress(Exception):
            self.leases.release_all()
        with suppress(Exception):
            self.leases.withdraw()

    def _idle(self, stop: threading.Event, pause: float) -> None:
        """Sleep `pause` seconds, or less: a store that can be woken (PostgreSQL ``LISTEN``
        on the durable inbox) ends the sleep when a notification arrives.

        While the store is not listening yet (the first sleep, or the first after its
        connection was lost) this only starts listening and returns: a notification
        committed between the last look and the ``LISTEN`` is seen by the next look
        instead of being missed for a whole poll."""
        waiter = getattr(self.store, "wait_for_inbox", None)
        deadline = time.monotonic() + pause
        if callable(waiter) and not (self._listening or stop.is_set()):
            self._listening = waiter(0.0) is not None
            if self._listening:
                return
        while callable(waiter) and not stop.is_set():
            left = deadline - time.monotonic()
            if left <= 0:
                return
            try:
                woken = waiter(min(left, _WAKE_SLICE_S))
            except BaseException:
                self._listening = False
                raise
            if woken is None:
                break
            if woken:
                return
        stop.wait(max(0.0, deadline - time.monotonic()))

    def _sleep_s(self, poll_s: float) -> float:
        upcoming = self.next_due()
        if upcoming is None:
            return poll_s
        return max(0.0, min(poll_s, (upcoming - self.clock()).total_seconds()))

    def _perform(self, task: Task) -> Activity:
        runtime = self.runtime
        ledger = None
        runs: list[RunRecord]
        match task.kind:
            case TaskKind.RECOVER:
                runs = runtime.recover(task.workflow)
            case TaskKind.RECONCILE:
                assert task.ledger_id is not None
                ledger = runtime.reconcile(task.ledger_id)
                runs = [self.store.get_run(ledger.run_id)]
            case TaskKind.DELIVER:
                assert task.notification_id is not None
                delivered = runtime.deliver(task.notification_id)
                runs = [delivered] if delivered is not None else []
            case TaskKind.POLL:
                assert task.invocation_id is not None
                polled = runtime.poll(task.invocation_id, owner=self.worker)
                runs = [polled] if polled is not None else []
            case TaskKind.TIMEOUT:
                assert task.invocation_id is not None
                timed_out = runtime.time_out(task.invocation_id)
                runs = [timed_out] if timed_out is not None else []
            case TaskKind.RESUME:
                assert task.run_id is not None
                runs = [runtime.resume(task.run_id)]
            case TaskKind.RETRY:
                assert task.run_id is not None
                runs = [runtime.retry(task.run_id)]
            case TaskKind.CONSUMER:
                assert task.handler is not None
                runs = [runtime.run_consumer(task.workflow, task.handler)]
            case TaskKind.PRODUCER:
                assert task.handler is not None
                runs = [runtime.run_producer(task.workflow, task.handler)]
        for run in runs:
            self.quiet.observe(run)
        return Activity(task=task, at=self.clock(), worker=self.worker, runs=runs, ledger=ledger)
