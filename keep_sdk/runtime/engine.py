"""`Runtime`: one producer or consumer run through the sandbox and the store.

A consumer run moves through the phases of chapter 06b with a durable
checkpoint after each step:

1. ``prepare`` runs; its PrepareResult and reservations are saved together
   (phase ``prepared``) before anything else happens.
2. With reservations, ``mutate`` runs and may ask for one mutation. The host
   writes the ledger entry ``in_flight`` (durable) and only then calls the
   connector with the run's idempotency key. Success records ``applied`` and
   phase ``mutated`` together.
3. ``next`` runs with ``mutationResult``; its state, its publishes and the
   consumption of the reservations commit in one transaction.

Failures change the run's status, never its phase (see `failures.route`).
The mutate handler never runs again once its mutation was handed to the host:
uncertain outcomes are reconciled by the host, and a call the host knows did
not happen is re-issued with the same idempotency key.
"""

from __future__ import annotations

import datetime as dt
import random
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING

from pydantic import JsonValue

from keep_sdk.connectors import ConnectorSet
from keep_sdk.model import HostPolicy, LedgerEntry, RunPhase, RunRecord
from keep_sdk.runtime._deployer import CheckedScript, Deployer
from keep_sdk.runtime._driver import TRANSIENT_MARK, Driver
from keep_sdk.runtime._ledger import MutationDesk
from keep_sdk.runtime._observer import Observer
from keep_sdk.runtime._runs import TIMEOUT_ACTIONS, Runs
from keep_sdk.runtime.durable import DurableDesk, NotifyReceipt
from keep_sdk.sandbox import Isolation
from keep_sdk.stores import Store

if TYPE_CHECKING:
    from keep_sdk.contract.manifest import DurableDeclaration, Manifest
    from keep_sdk.contract.observations import Observation
    from keep_sdk.runtime._loading import WorkflowLoader

__all__ = ["TIMEOUT_ACTIONS", "TRANSIENT_MARK", "CheckedScript", "Runtime"]


def _ignore(observation: Observation) -> None:
    """The default observer: nobody is listening."""


class Runtime:
    """Executes runs of deployed workflows against one store and one set of connectors.

    The composition root hands in what the runtime does not own: `connectors`,
    `load_workflow` (validates a script on `deploy`; without it `deploy` is
    refused, runs of deployed versions still work) and `observe` (told of every
    run, ledger and escalation change; ``KeepPlugins.notify`` calls the
    ``observe`` hooks). `isolation` runs a phase in the sandbox; it has no default here, so
    no runtime is built with a silent choice (`keep_sdk.Installation` defaults to
    `keep_sdk.sandbox.ProcessIsolation`, which survives engine crashes). `now` is the
    clock; `rng` draws backoff jitter; `deterministic` fixes each phase's
    ``Date`` to `now()` and seeds ``Math.random`` from the run id (replays, tests).
    Every method leaves the store consistent whatever it raises.
    """

    def __init__(
        self,
        store: Store,
        connectors: ConnectorSet,
        *,
        load_workflow: WorkflowLoader | None = None,
        observe: Callable[[Observation], None] | None = None,
        policy: HostPolicy | None = None,
        isolation: Isolation,
        now: Callable[[], dt.datetime] | None = None,
        rng: random.Random | None = None,
        deterministic: bool = False,
        workflow_policies: Mapping[str, HostPolicy] | None = None,
    ) -> None:
        self.connectors = connectors
        self.load_workflow = load_workflow
        self.policy = policy or HostPolicy()
        self.now = now or (lambda: dt.datetime.now(dt.UTC))
        self.rng = rng or random.Random()
        self.observe = observe or _ignore
        self.observer = Observer(store, self.observe)
        self._deployer = Deployer(
            store,
            connectors,
            load_workflow=load_workflow,
            policy=self.policy,
            workflow_policies=workflow_policies or {},
        )
        self._driver = Driver(
            store,
            connectors,
            deployer=self._deployer,
            policy=self.policy,
            isolation=isolation,
            now=self.now,
            rng=self.rng,
            deterministic=deterministic,
            observer=self.observer,
        )
        self.workflow_policies = self._deployer.workflow_policies
        self._runs = Runs(self._deployer, self._driver)
        self.mutations: MutationDesk = self._driver.mutations
        self.durable: DurableDesk = self._driver.durable

    @property
    def store(self) -> Store:
        """The store every run, deploy and version read goes to."""
        return self._driver.store

    @store.setter
    def store(self, store: Store) -> None:
        self._deployer.store = store
        self._driver.store = store

    @property
    def isolation(self) -> Isolation:
        """Where each phase runs (a worker process, or this process)."""
        return self._driver.isolation

    @isolation.setter
    def isolation(self, isolation: Isolation) -> None:
        self._driver.isolation = isolation

    @property
    def deterministic(self) -> bool:
        """Whether each phase's ``Date`` is `now()` and ``Math.random`` is seeded per run."""
        return self._driver.deterministic

    @deterministic.setter
    def deterministic(self, deterministic: bool) -> None:
        self._driver.deterministic = deterministic

    @property
    def manifest(self) -> Manifest:
        """The connectors' manifest, computed on first use (never while the runtime is built:
        a connector may need a server to describe itself)."""
        return self._deployer.manifest

    def policy_for(self, workflow: str) -> HostPolicy:
        """The policy runs of `workflow` get: its own (keep.toml's ``[workflows.<name>.policy]``
        merged over ``[policy]``) when it has one, else `policy`."""
        return self._deployer.policy_for(workflow)

    # Deployment

    def check(
        self, source: str, *, name: str | None = None, filename: str | None = None
    ) -> CheckedScript:
        """Validate `source` as `deploy` would (these connectors; the policy of the workflow
        `name`, else of the name the script declares) without storing anything.

        Raises `ScriptRejected` (with the validator's report) when the script has
        errors. Hand the result to `deploy`/`deploy_if_changed` as `checked` so the
        script is validated once.
        """
        return self._deployer.check(source, filename, name)

    def deploy(
        self,
        source: str,
        *,
        name: str | None = None,
        filename: str | None = None,
        checked: CheckedScript | None = None,
    ) -> int:
        """Validate `source` and store it as the workflow's new current version.

        Raises `ScriptRejected` (with the validator's report) when the script
        has errors. Returns the version number. `checked` is a validation of
        `source` made earlier (`check`, or one made before the store was open): its
        manifest is stored as is when it was made against these connectors and the
        policy of the workflow deployed, and the script is validated again otherwise.
        """
        return self._deployer.deploy(source, name=name, filename=filename, checked=checked)

    def deploy_if_changed(
        self,
        source: str,
        *,
        name: str | None = None,
        filename: str | None = None,
        checked: CheckedScript | None = None,
    ) -> tuple[int, bool]:
        """Deploy `source` unless it is already the current version of its workflow.

        Returns ``(version, deployed)``: the new version and True, or the
        current version and False when its source is `source` byte for byte
        (nothing is written then). Without `name` the script's own name is
        used. Raises `ScriptRejected` like `deploy` for a script with errors;
        `checked` as for `deploy`.
        """
        return self._deployer.deploy_if_changed(
            source, name=name, filename=filename, checked=checked
        )

    # Runs

    def run_producer(self, workflow: str, producer: str) -> RunRecord:
        """Run `producer` once on the current version; return the run as it ended."""
        return self._runs.run_producer(workflow, producer)

    def run_consumer(self, workflow: str, consumer: str) -> RunRecord:
        """Run `consumer` once on the current version; return the run as it ended."""
        return self._runs.run_consumer(workflow, consumer)

    def resume(self, run_id: str) -> RunRecord:
        """Continue a paused run from its phase (after a backoff, a grant or a resolution).

        A run at ``mutating`` whose mutation the host knows did not happen
        re-issues the same call with the same idempotency key.
        """
        return self._runs.resume(run_id)

    def notify(
        self, correlation_key: str, result: JsonValue = None, *, source: str = "api"
    ) -> NotifyReceipt:
        """Deliver the result of a durable operation by its correlation key, then continue
        its parked run to the end (``next`` and the commit) in this process.

        The notification is recorded in the inbox first (at-least-once delivery:
        a repeat is recorded as ``duplicate`` and applied never). A malformed key
        raises `InvalidArguments`, an unknown one `NotFound`; neither writes
        anything. A run that is not parked yet (its ``start`` still running)
        keeps the notification pending; `deliver_pending` applies it once the
        run parks. The caller holds the workflow's lease (or runs no worker).
        """
        return self._runs.notify(correlation_key, result, source=source)

    def poll(self, invocation_id: str, *, owner: str) -> RunRecord | None:
        """Poll one due durable invocation as `owner` (claimed by compare-and-swap) and, once
        it is done, drive its run on: ``done(ok)`` to ``next`` and the commit, ``done(error)``
        to the failure routing as a definite failure. None when nothing was integrated."""
        return self._runs.poll(invocation_id, owner=owner)

    def durable_semantics(
        self, run: RunRecord, connector: str, operation: str
    ) -> DurableDeclaration:
        """The key fields and park timeout `run` uses for a durable operation: those frozen
        with its workflow version at deploy (the connector's current ones for versions
        recorded before they were frozen)."""
        return self._runs.durable_semantics(run, connector, operation)

    def time_out(self, invocation_id: str) -> RunRecord | None:
        """Time out one durable invocation past its ``timeout_at`` (the scan's step): the
        invocation becomes ``timed_out``, its run ``paused:timeout``, and a person is told
        (an escalation naming the actions). None when it was not due or no longer parked."""
        return self._runs.time_out(invocation_id)

    def scan_timeouts(self, limit: int = 100) -> list[RunRecord]:
        """Time out every parked invocation past its deadline (at most `limit` per call);
        reads only the index of active invocations' deadlines."""
        return self._runs.scan_timeouts(limit)

    def deliver(self, notification_id: str) -> RunRecord | None:
        """Apply one pending notification to its parked run and drive the run on; None when
        the run is not parked (yet) or the workflow has an active run."""
        return self._runs.deliver(notification_id)

    def retry(self, run_id: str) -> RunRecord:
        """Try a failed or crashed run again on the current version (after a fix, say).

        Once its mutation was applied (or skipped) a retry run continues from
        ``emitting`` with the copied results and the same reservations; before
        that, its events were released, so a fresh run prepares again.
        Returns the new run as it ended.
        """
        return self._runs.retry(run_id)

    def begin_retry(self, old: RunRecord, phase: RunPhase) -> RunRecord:
        """Begin a consumer run that continues `old` at `phase` with its inputs (not driven)."""
        return self._runs.begin_retry(old, phase)

    def close(self) -> None:
        """Stop observing the store (the store and the isolation stay open: their owner closes
        them). Until then every change committed to the store in this process is observed,
        also one made through another `Runtime` on the same store."""
        self.observer.close()

    def drive(self, run: RunRecord) -> RunRecord:
        """Carry an active run (a fresh or retry run) as far as it can go; return it as it ended."""
        return self._driver.drive(run)

    def reconcile(self, ledger_id: str) -> LedgerEntry:
        """One reconciliation attempt for a ``needs_reconcile`` entry (the background loop).

        applied: the run continues to ``next`` and commits. failed (it did not
        happen): the call is re-issued with the same key. retry: the attempt is
        counted; when attempts run out the entry becomes indeterminate and the
        run is escalated. Returns the entry as it ended.
        """
        return self._runs.reconcile(ledger_id)

    def recover(self, workflow: str | None = None) -> list[RunRecord]:
        """Restart recovery: every active run was interrupted by a crash of the host.

        With `workflow`, only that workflow's active runs (a worker that took
        over the workflow's expired lease recovers just what it now owns).

        A run whose mutation may be in flight is paused for reconciliation (its
        ledger entry is due at once); one whose mutation was already found
        indeterminate waits for a person (escalated again). Any other run becomes
        ``crashed``: before a mutation its reservations are released for a fresh
        run (phase reset); after one, a retry run continues it from ``emitting``. Returns the runs
        as they ended.
        """
        return self._runs.recover(workflow)
