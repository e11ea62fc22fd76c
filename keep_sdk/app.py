"""The composition root: the store, connectors, runtime and scheduler of one installation.

`Installation.open` assembles them from the loaded plugins and passes each
the registries it needs; nothing below this module looks a registry up for
itself. The ``keep`` commands (and a web console) work on an `Installation`.

The built-in connectors are test doubles. So that ``keep status`` after
``keep run`` sees what the run did (and so several worker processes share one
mailbox, sheet and chat), the doubles keep their state in a SQLite file: by
default ``doubles.db`` next to a SQLite store, in memory for other stores
unless ``--doubles PATH`` says where.
"""

from __future__ import annotations

import datetime as dt
import json
import sqlite3
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import JsonValue

from keep_sdk.config import KeepConfig, find_config, install_log_redaction, load_config
from keep_sdk.contract.durable import Notification, NotificationOutcome
from keep_sdk.contract.manifest import Manifest
from keep_sdk.contract.workflow import WorkflowManifest
from keep_sdk.errors import ActionRefused, ConfigurationError, KeepError
from keep_sdk.model import HostPolicy
from keep_sdk.plugins import KeepPlugins, default_plugins
from keep_sdk.stores import (
    DEFAULT_STORE_URL,
    Publication,
    PublishResult,
    Store,
    publish_from_outside,
    record_notification,
    store_scheme,
    workflow_for_topic,
)

if TYPE_CHECKING:
    from keep_sdk.connectors import ConnectorSet
    from keep_sdk.connectors.builtin import ServiceDouble
    from keep_sdk.connectors.builtin.seeding import Seed
    from keep_sdk.runtime import NotifyReceipt, PersonActions, Runtime
    from keep_sdk.sandbox import Isolation
    from keep_sdk.scheduler import Scheduler
    from keep_sdk.status import StatusReport

    IsolationChoice = str | Isolation
    RuntimeFactory = Callable[..., Runtime]

__all__ = [
    "DEFAULT_ISOLATION",
    "ISOLATIONS",
    "Installation",
    "IsolationChoice",
    "OpenedStore",
    "RuntimeFactory",
    "default_doubles_path",
    "isolation_of",
    "load_seed",
    "open_checked_store",
    "read_config",
    "script_connectors",
    "script_manifest",
    "sqlite_path",
]

ISOLATIONS = ("process", "in-process")
"""``process``: each phase in a killable worker process (the default); ``in-process``: faster,
for trusted scripts and tests."""

DEFAULT_ISOLATION = "process"
"""The one isolation default, of `Installation.open` and every ``keep`` command: the safe one."""

_LEASE_POLL_S = 0.2


def __getattr__(name: str) -> Any:
    """Two aliases built on first use, as they name the sandbox and the runtime, which the
    store-only commands (`OpenedStore`) never import.

    ``IsolationChoice``: how phases are isolated, a name of `ISOLATIONS` or an `Isolation`
    the caller owns (an installation closes only the isolation it built from a name).
    ``RuntimeFactory``: builds the runtime of an installation from ``(store, connectors,
    **options)`` (the options `Runtime` takes); the conformance scenarios hold another
    runtime to the spec through it."""
    if name == "IsolationChoice":
        from keep_sdk.sandbox import Isolation

        return str | Isolation
    if name == "RuntimeFactory":
        from keep_sdk.runtime import Runtime

        return Callable[..., Runtime]
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def sqlite_path(store_url: str) -> Path | None:
    """The file of a ``sqlite:///`` store URL; None for other stores (and unparsable URLs,
    which opening the store reports)."""
    if store_scheme(store_url) != "sqlite":
        return None
    from sqlalchemy.engine import make_url
    from sqlalchemy.exc import ArgumentError

    try:
        database = make_url(store_url).database
    except ArgumentError:
        return None
    return Path(database).expanduser() if database else None


def default_doubles_path(store_url: str) -> Path | None:
    """``doubles.db`` next to a SQLite store file; None (in memory) for other stores."""
    database = sqlite_path(store_url)
    return None if database is None else database.parent / "doubles.db"


def _reason(exc: BaseException) -> str:
    original = getattr(exc, "orig", None)
    if isinstance(exc, OSError):
        where = f" ({exc.filename})" if exc.filename else ""
        return f"{exc.strerror or exc}{where}"
    return str(original if original is not None else exc).splitlines()[0]


@contextmanager
def _opening(what: str) -> Iterator[None]:
    """Turn what a broken or unreachable store or doubles file raises while being opened
    into one `ConfigurationError` that names it and the reason."""
    from sqlalchemy.exc import SQLAlchemyError

    try:
        yield
    except KeepError:
        raise
    except (SQLAlchemyError, sqlite3.Error, OSError, ValueError) as exc:
        raise ConfigurationError(
            f"cannot open {what}: {_reason(exc)}; check the path and its permissions, and that "
            "it is a keep store (a SQLite file written by keep, or a PostgreSQL database)"
        ) from None


def open_checked_store(url: str, *, plugins: KeepPlugins | None = None) -> Store:
    """The store at `url` through `plugins` (default: the installed ones), read once so a
    file that is not a keep store fails here; every failure is one `ConfigurationError`."""
    return _open_store(url, plugins=plugins)


def _open_store(
    url: str, *, plugins: KeepPlugins | None, clock: Callable[[], dt.datetime] | None = None
) -> Store:
    options: dict[str, Any] = {} if clock is None else {"clock": clock}
    with _opening(f"the store {url}"):
        store = (plugins or default_plugins()).open_store(url, **options)
    try:
        with _opening(f"the store {url}"):
            store.list_workflows()
    except BaseException:
        store.close()
        raise
    return store


def _require_store(store_url: str | None) -> None:
    """`ConfigurationError` when `store_url` (None: the default) names a SQLite file that
    does not exist; nothing is created."""
    url = store_url or DEFAULT_STORE_URL
    database = sqlite_path(url)
    if database is not None and not database.is_file():
        hint = (
            f"`keep run FILE --store {url}` creates it"
            if store_url
            else "`keep run FILE` here creates it, or give --store URL"
        )
        raise ConfigurationError(f"there is no keep store at {database}; {hint}")


def read_config(
    store_url: str | None = None,
    *,
    explicit: Path | None = None,
    plugins: KeepPlugins | None = None,
) -> KeepConfig:
    """The checked ``keep.toml`` of the store at `store_url`, found by
    `keep_sdk.config.find_config`: `explicit` (``--config``), else ``$KEEP_CONFIG``, else
    ``keep.toml`` in the working folder or its nearest parent, else next to a SQLite store;
    an empty configuration when there is none. Its `KeepConfig.source` says which file and
    why (or where keep looked). A bad file is one `ConfigurationError`
    (`keep_sdk.config.load_config`)."""
    database = sqlite_path(store_url or DEFAULT_STORE_URL)
    found = find_config(explicit=explicit, store_dir=database.parent if database else None)
    return load_config(found, types=(plugins or default_plugins()).connector_types())


def _with_configured(registered: ConnectorSet, config: KeepConfig) -> ConnectorSet:
    """The registered connectors and keep.toml's, which are built when first called."""
    clashes = sorted(set(registered) & set(config.connectors))
    if clashes:
        raise ConfigurationError(
            f"{config.path}: connectors.{clashes[0]}: the name {clashes[0]!r} is taken by a "
            "connector a plugin registers; give this instance another name"
        )
    from keep_sdk.connectors import ConnectorSet

    return ConnectorSet(list(registered.values()), deferred=config.deferred_connectors())


def _frozen_reconcilable(store: Store, connector: str, operation: str) -> bool:
    for record in store.list_workflows():
        manifest = WorkflowManifest.model_validate(
            store.get_workflow_version(record.name).manifest
        ).connectors
        for declared in manifest.connectors if manifest is not None else []:
            if declared.name == connector:
                for op in declared.operations:
                    if op.name == operation and op.reconcilable:
                        return True
    return False


def script_connectors(config: KeepConfig, *, plugins: KeepPlugins | None = None) -> ConnectorSet:
    """What a script may call in the installation `plugins` (default: the installed ones) and
    `config` make, without opening a store: every registered connector (doubles in memory)
    and keep.toml's, built on first use. Close the set when done."""
    return _with_configured((plugins or default_plugins()).connector_set(), config)


def script_manifest(config: KeepConfig, *, plugins: KeepPlugins | None = None) -> Manifest:
    """The manifest of `script_connectors` (each keep.toml connector built to read it, then
    closed; one that cannot be built raises its `ConfigurationError`); its `origin` says
    which keep.toml was read and why, or where none was found."""
    connectors = script_connectors(config, plugins=plugins)
    try:
        found = connectors.manifest().connectors
    finally:
        connectors.close()
    origin = config.source.describe() if config.source is not None else None
    return Manifest(connectors=sorted(found, key=lambda c: c.name), origin=origin)


def load_seed(path: Path) -> dict[str, Any]:
    """Read a seed file (JSON or YAML): ``{connector name: data, "faults": [...]}``.

    Only the syntax is checked here; `Installation.check_seed` checks the shape."""
    import yaml

    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigurationError(f"cannot read the seed file {path}: {exc.strerror}") from None
    try:
        data = json.loads(text) if path.suffix == ".json" else yaml.safe_load(text)
    except (json.JSONDecodeError, yaml.YAMLError) as exc:
        raise ConfigurationError(f"the seed file {path} is not valid JSON/YAML: {exc}") from None
    if not isinstance(data, dict):
        raise ConfigurationError(
            f"the seed file {path} must map connector names to their data, such as "
            '{"gmail": {"messages": [...]}, "sheets": {"spreadsheets": {...}}}'
        )
    return data


def isolation_of(name: IsolationChoice) -> Isolation:
    """The `Isolation` a choice names: a new one for a name of `ISOLATIONS` (the caller
    closes it), the instance itself otherwise; an unknown name is a `ConfigurationError`."""
    if not isinstance(name, str):
        return name
    from keep_sdk.sandbox import InProcessIsolation, ProcessIsolation

    if name == "process":
        return ProcessIsolation()
    if name == "in-process":
        return InProcessIsolation()
    raise ConfigurationError(f"unknown isolation {name!r}; choose one of: {', '.join(ISOLATIONS)}")


@dataclass
class Installation:
    """An opened store with its connectors and runtime: the one way keep builds a runtime.

    ``keep run``, ``keep worker``, ``keep test``, replay, repair, the console,
    `keep_sdk.repair.check` and the conformance scenarios all open one with
    `Installation.open`, so what is checked is what runs: the same plugins, the
    same ``keep.toml`` connectors and policy, the same built-in doubles. A test
    swaps parts through `open`'s documented parameters (`clock`, `doubles`,
    `store`, `isolation`), never by composing a runtime of its own. Close it when
    done.
    """

    store_url: str
    store: Store
    connectors: ConnectorSet
    runtime: Runtime
    doubles_path: Path | None
    config: KeepConfig
    plugins: KeepPlugins
    clock: Callable[[], dt.datetime] | None = None
    runtime_options: dict[str, Any] = field(default_factory=dict)
    make_runtime: RuntimeFactory | None = None
    assembled: ConnectorSet | None = None
    owns_isolation: bool = True

    @classmethod
    def open(
        cls,
        store_url: str | None = None,
        *,
        doubles: Path | None = None,
        isolation: IsolationChoice = DEFAULT_ISOLATION,
        policy: HostPolicy | None = None,
        plugins: KeepPlugins | None = None,
        read_only: bool = False,
        must_exist: bool = False,
        config: KeepConfig | None = None,
        clock: Callable[[], dt.datetime] | None = None,
        deterministic: bool = False,
        store: Store | None = None,
        wrap_connectors: Callable[[ConnectorSet], ConnectorSet] | None = None,
        make_runtime: RuntimeFactory | None = None,
    ) -> Installation:
        """Open the store at `store_url` (default ``sqlite:///.keep/keep.db``) with the
        connectors, rules, store schemes and observers of `plugins` (default: the
        installed plugins) and the ``keep.toml`` `config`; built-in doubles are backed by
        `doubles` (or the default).

        `must_exist` is for acting on what is there: a SQLite store that does not
        exist is a `ConfigurationError` (no file or folder is created).
        `read_only` is for looking: as `must_exist`, and the doubles are in
        memory (no ``doubles.db`` is created or written). A store or doubles file that
        cannot be opened (not a database, truncated, bad URL options, a folder that
        cannot be created) is a `ConfigurationError` saying so, never a raw
        database error.

        `config` is the checked ``keep.toml`` (default: `read_config` for this
        store): its connectors join the registered ones, each built when a run first
        calls it (opening builds none, so looking never starts a server), its ``[policy]`` is the
        policy and each ``[workflows.<name>.policy]`` that workflow's (unless
        `policy` is given, which then applies to every workflow), and its
        secrets are masked in every log record from now on.

        What a test may swap, and nothing else:

        - `clock`: the time of the store, the built-in doubles, the runtime and its
          schedulers (a `keep_sdk.conformance.ManualClock` moves only when told);
          `deterministic` makes ``Date`` that clock and seeds ``Math.random`` per run.
        - `doubles`: the SQLite file the built-in doubles share (two processes on one
          world); in memory when None and the store is not a SQLite file.
        - `store`: a store the caller opened (it is closed with the installation);
          `store_url` then only names it.
        - `isolation`: ``process`` (`DEFAULT_ISOLATION`), ``in-process``, or an
          `Isolation` instance, which stays the caller's (several installations may share
          one worker pool; closing the installation leaves it open).
        - `wrap_connectors`: sees the assembled connectors and returns the set the
          runtime calls (a harness that interrupts a call at a chosen point).
        - `make_runtime`: builds the runtime from the same parts (`RuntimeFactory`).
        """
        from keep_sdk.connectors.builtin import ServiceDouble
        from keep_sdk.runtime import Runtime

        url = store_url or DEFAULT_STORE_URL
        plugins = plugins or default_plugins()
        config = config if config is not None else read_config(url, plugins=plugins)
        install_log_redaction(config.secrets)
        if store is None and (read_only or must_exist):
            _require_store(store_url)
        if store is None:
            store = _open_store(url, plugins=plugins, clock=clock)
        try:
            backing = None if read_only else (doubles or default_doubles_path(url))
            options: dict[str, Mapping[str, Any]] = {}
            for name, klass in plugins.connectors().items():
                if issubclass(klass, ServiceDouble):
                    made: dict[str, Any] = {}
                    if backing is not None:
                        made["backing"] = backing
                    if clock is not None:
                        made["clock"] = clock
                    options[name] = made
            with _opening(f"the connectors' data file {backing}"):
                registered = plugins.connector_set(**options)
            assembled = _with_configured(registered, config)
            connectors = assembled if wrap_connectors is None else wrap_connectors(assembled)
        except BaseException:
            store.close()
            raise
        runtime_options: dict[str, Any] = {
            "policy": policy or config.policy,
            "workflow_policies": (
                {}
                if policy is not None
                else {name: config.policy_for(name) for name in config.workflow_policies}
            ),
            "isolation": isolation_of(isolation),
            "load_workflow": plugins.load_workflow,
            "observe": plugins.notify,
            "deterministic": deterministic,
        }
        if clock is not None:
            runtime_options["now"] = clock
        runtime = (make_runtime or Runtime)(store, connectors, **runtime_options)
        return cls(
            url,
            store,
            connectors,
            runtime,
            backing,
            config,
            plugins,
            clock,
            runtime_options,
            make_runtime,
            assembled,
            isinstance(isolation, str),
        )

    def restart(self) -> Runtime:
        """Abandon the current runtime, as a killed host is abandoned (nothing of it is
        closed or finished), and build a new one on the same store, connectors and
        options; it recovers what the old one left active. Returns the new runtime."""
        from keep_sdk.runtime import Runtime

        self.runtime = (self.make_runtime or Runtime)(
            self.store, self.connectors, **self.runtime_options
        )
        return self.runtime

    def reconcilable(self, connector: str, operation: str) -> bool:
        """Whether ``connector.operation`` can reconcile (False for an unknown one).

        Builds nothing: a keep.toml connector not built yet is answered from the
        connector manifests frozen with the deployed workflows' current versions.
        """
        live = self.connectors.built().get(connector)
        if live is not None:
            try:
                return live.operation(operation).reconcilable
            except KeepError:
                return False
        if connector not in self.connectors:
            return False
        return _frozen_reconcilable(self.store, connector, operation)

    def status(self, *, workflow: str | None = None, limit: int = 10) -> StatusReport:
        """`keep_sdk.status.build_status` of this installation: what came in, what went
        out, what waits, and what a person can do (``retry`` offered for an escalated
        mutation only when its connector can reconcile)."""
        from keep_sdk.status import build_status

        return build_status(
            self.store,
            store_url=self.store_url,
            workflow=workflow,
            limit=limit,
            now=self.runtime.now(),
            reconcilable=self.reconcilable,
        )

    @property
    def actions(self) -> PersonActions:
        """A person's actions on this installation."""
        from keep_sdk.runtime import PersonActions

        return PersonActions(self.runtime)

    def scheduler(
        self,
        *,
        worker: str | None = None,
        lease_ttl_s: float | None = None,
        drain_s: float | None = None,
        concurrency: int = 1,
    ) -> Scheduler:
        """A scheduler on this installation's runtime (and clock); close it to release its
        leases (`lease_ttl_s` default: `keep_sdk.scheduler.DEFAULT_LEASE_TTL_S`). `drain_s`
        (default `keep_sdk.scheduler.DEFAULT_DRAIN_S`) bounds a backlog's drain in seconds
        (`Scheduler`); a harness that
        must be deterministic whatever the machine's speed passes `math.inf`, so only the
        drain's run count bounds it. `concurrency`: workflows run at once (`Scheduler`)."""
        from keep_sdk.scheduler import DEFAULT_DRAIN_S, DEFAULT_LEASE_TTL_S, Scheduler

        return Scheduler(
            self.runtime,
            worker=worker,
            lease_ttl_s=DEFAULT_LEASE_TTL_S if lease_ttl_s is None else lease_ttl_s,
            clock=self.clock,
            drain_s=DEFAULT_DRAIN_S if drain_s is None else drain_s,
            concurrency=concurrency,
        )

    @contextmanager
    def holding(self, workflow: str, *, worker: str, wait_s: float | None) -> Iterator[None]:
        """Hold `workflow`'s lease as `worker` for the duration, so no other worker runs it
        while a person's action drives its runs here.

        Waits up to `wait_s` seconds (None: a lease's time to live,
        `keep_sdk.scheduler.DEFAULT_LEASE_TTL_S`) for the current holder to let go, then
        raises `ActionRefused` naming it. The lease is released on exit.
        """
        scheduler = self.scheduler(worker=worker)
        try:
            deadline = time.monotonic() + (
                scheduler.leases.ttl.total_seconds() if wait_s is None else wait_s
            )
            while scheduler.leases.claim(workflow) is None:
                if time.monotonic() > deadline:
                    lease = self.store.get_lease(workflow)
                    owner = lease.owner if lease else "another worker"
                    raise ActionRefused(
                        f"workflow {workflow!r} is busy on {owner}; try again in a moment "
                        "(or stop that worker)"
                    )
                time.sleep(_LEASE_POLL_S)
            yield
        finally:
            scheduler.close()

    def notify(
        self,
        correlation_key: str,
        result: JsonValue,
        *,
        source: str,
        worker: str,
        wait_s: float | None,
    ) -> NotifyReceipt:
        """Record a durable operation's `result` for `correlation_key` in the inbox, then
        continue its parked run holding the workflow's lease (``keep notify``, the console).

        A malformed key raises `InvalidArguments` and an unknown one `NotFound`, both
        before anything is written. While another worker holds the workflow (past
        `wait_s`) or the run is not parked yet, the notification stays pending for a
        worker to deliver, and the receipt has no run.
        """
        notification = self.runtime.durable.notify(correlation_key, result, source=source)
        return self.deliver(notification, worker=worker, wait_s=wait_s)

    def deliver(
        self, notification: Notification, *, worker: str, wait_s: float | None
    ) -> NotifyReceipt:
        """Continue the parked run of a recorded `notification` as `notify` does (a
        notification that is not pending is only read back); the receipt holds the
        notification as stored afterwards."""
        from keep_sdk.runtime import NotifyReceipt

        runtime = self.runtime
        run = None
        if notification.outcome is NotificationOutcome.PENDING:
            try:
                with self.holding(notification.workflow, worker=worker, wait_s=wait_s):
                    run = runtime.deliver(notification.id)
            except ActionRefused:
                run = None
        stored = next(
            n
            for n in runtime.durable.durable.list_notifications(notification.invocation_id)
            if n.id == notification.id
        )
        return NotifyReceipt(notification=stored, run=run)

    def _doubles(self) -> dict[str, ServiceDouble]:
        from keep_sdk.connectors.builtin import ServiceDouble

        return {
            name: connector
            for name, connector in self.connectors.built().items()
            if isinstance(connector, ServiceDouble)
        }

    def check_seed(self, document: Any, *, source: str = "the seed data") -> Seed:
        """Check a seed document (`load_seed`) before anything is deployed or written:
        known doubles, each one's data shape, faults of the seedable kinds on operations
        the double has. Raises `ConfigurationError` naming `source` and the bad value."""
        from keep_sdk.connectors.builtin.seeding import parse_seed

        doubles = self._doubles()
        seed = parse_seed(document, doubles=doubles, source=source)
        for fault in seed.faults:
            if fault.operation is not None:
                try:
                    doubles[fault.connector].operation(fault.operation.removeprefix("reconcile:"))
                except KeepError as exc:
                    raise ConfigurationError(f"{source}: faults: {exc}") from None
        return seed

    def seed(
        self, document: Any, *, replace: bool = False, source: str = "the seed data"
    ) -> list[str]:
        """Give the built-in doubles their data and inject the faults the document declares;
        returns the connector names seeded.

        The document is checked first (`check_seed`). By default the data is
        merged into what each double holds (`keep_sdk.connectors.builtin.seeding.merge`:
        nothing is lost); with `replace` each top-level key is replaced."""
        seed = self.check_seed(document, source=source)
        doubles = self._doubles()
        for name, data in seed.data.items():
            if replace:
                doubles[name].seed(data)
            else:
                doubles[name].merge_seed(data)
        for fault in seed.faults:
            doubles[fault.connector].faults.inject(
                fault.kind, operation=fault.operation, times=fault.times, delay_s=fault.delay_s
            )
        return list(seed.data)

    def __enter__(self) -> Installation:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def close(self) -> None:
        """Stop worker processes and release the store's and connectors' connections."""
        (self.assembled or self.connectors).close()
        self.runtime.close()
        close = getattr(self.runtime.isolation, "close", None)
        if self.owns_isolation and callable(close):
            close()
        self.store.close()


@dataclass
class OpenedStore:
    """An existing store opened through the plugins' store schemes with its ``keep.toml``,
    and no connectors, runtime or scheduler: what ``keep publish`` and ``keep notify`` need
    to write, so they start without importing the sandbox, the validator or the runtime.

    Its `publish` and `notify` call the functions `PersonActions` and the runtime call
    (`keep_sdk.stores.publish_from_outside`, `keep_sdk.stores.record_notification`), with
    the policy `Installation.open` gives the runtime. When a run must go on (a
    notification to deliver), `installation` builds the `Installation` on this same store;
    the store is then that installation's to close. Close it when done.
    """

    store_url: str
    store: Store
    config: KeepConfig
    plugins: KeepPlugins
    handed_over: bool = False

    @classmethod
    def open(
        cls,
        store_url: str | None = None,
        *,
        plugins: KeepPlugins | None = None,
        config: KeepConfig | None = None,
    ) -> OpenedStore:
        """Open the store at `store_url` (default ``sqlite:///.keep/keep.db``) as
        `Installation.open` does with `must_exist`: a missing SQLite file, or one that
        cannot be opened, is one `ConfigurationError`; keep.toml's secrets are masked in
        log records from now on."""
        url = store_url or DEFAULT_STORE_URL
        plugins = plugins or default_plugins()
        config = config if config is not None else read_config(url, plugins=plugins)
        install_log_redaction(config.secrets)
        _require_store(store_url)
        return cls(url, _open_store(url, plugins=plugins), config, plugins)

    @property
    def policy(self) -> HostPolicy:
        """The installation-wide policy (``[policy]`` of keep.toml), the runtime's."""
        return self.config.policy

    def publish(
        self, publication: Publication, *, workflow: str | None, actor: str
    ) -> tuple[str, PublishResult]:
        """Publish into `workflow` (default: the one deployed workflow declaring the topic)
        as `PersonActions.publish` does; returns the workflow and the result."""
        target = workflow or workflow_for_topic(self.store, publication.topic)
        result = publish_from_outside(
            self.store, target, publication, policy=self.policy, actor=actor
        )
        return target, result

    def notify(self, correlation_key: str, result: JsonValue, *, source: str) -> Notification:
        """Record a durable operation's `result` in the inbox as the runtime does (checked
        first; `NotFound` for an unknown key). A ``pending`` notification still has to be
        delivered: `installation` and then `Installation.deliver`."""
        return record_notification(
            self.store, correlation_key, result, source=source, policy=self.policy
        )

    def installation(self, **options: Any) -> Installation:
        """The `Installation` on this store, its plugins and keep.toml (`options`: those of
        `Installation.open`, such as `doubles` and `isolation`); it owns the store now."""
        built = Installation.open(
            self.store_url,
            plugins=self.plugins,
            config=self.config,
            store=self.store,
            must_exist=True,
            **options,
        )
        self.handed_over = True
        return built

    def __enter__(self) -> OpenedStore:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def close(self) -> None:
        """Release the store's connections, unless an installation took the store over."""
        if not self.handed_over:
            self.store.close()
