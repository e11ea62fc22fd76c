"""The world of one case or scenario: an `Installation` on a manual clock, its current
host (runtime and scheduler) and what happened so far.

Nothing here composes a runtime: the store, the connectors (every plugin connector,
every ``keep.toml`` connector, every built-in double), the policy and the runtime
come from `keep_sdk.app.Installation.open`; the world only swaps what a test may
swap there (the clock, the doubles' file, the isolation, a connector wrapper, a
runtime factory). The wrapper puts a recording stand-in in place of every connector
that is not a double (`keep_sdk.cases._standin`) and can kill the host at a call; it
builds no connector the world does not ask for.
"""

from __future__ import annotations

import datetime as dt
import difflib
import math
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

from keep_sdk.app import Installation, IsolationChoice, RuntimeFactory
from keep_sdk.cases._clock import ManualClock
from keep_sdk.cases._crash import CrashingConnectors, SimulatedCrash
from keep_sdk.cases._model import StandInSeed
from keep_sdk.cases._standin import Effect, StandInConnectors
from keep_sdk.config import KeepConfig
from keep_sdk.connectors import ConnectorSet
from keep_sdk.connectors.builtin import ServiceDouble
from keep_sdk.contract.observations import Escalated
from keep_sdk.errors import ConfigurationError
from keep_sdk.model import HostPolicy
from keep_sdk.plugins import KeepPlugins, Observation
from keep_sdk.runtime import Runtime
from keep_sdk.scheduler import Scheduler
from keep_sdk.stores import SupportsFaultInjection

__all__ = ["Harness", "World"]

_MAX_STEPS = 1_000


@dataclass(frozen=True)
class Harness:
    """How a world is opened: the installation's parts and who acts in it.

    `plugins` and `config` are the installation's (a case runs with the user's,
    a scenario with the built-in plugins and no ``keep.toml``); `policy`, when given,
    applies to every workflow; `make_runtime` builds each host's runtime (another
    runtime held to the scenarios); `kills` backs the doubles by a file a killed
    host process shares.
    """

    plugins: KeepPlugins
    config: KeepConfig
    store_url: str = "memory://"
    policy: HostPolicy | None = None
    make_runtime: RuntimeFactory | None = None
    kills: bool = False
    worker: str = "scenario-host"
    actor: str = "person"
    source: str = "keep-test"
    isolation: IsolationChoice = "in-process"


@dataclass
class World:
    """One opened installation under a manual clock, and the host that runs in it."""

    harness: Harness
    clock: ManualClock
    installation: Installation
    crashing: CrashingConnectors
    folder: tempfile.TemporaryDirectory[str] | None
    scheduler: Scheduler
    workflow: str = ""
    hosts: int = 1
    store_point: str | None = None
    trace: list[str] = field(default_factory=list)

    @classmethod
    def open(cls, harness: Harness, start: dt.datetime) -> World:
        """Open the installation of `harness` with its clock at `start`."""
        clock = ManualClock(start)
        folder = tempfile.TemporaryDirectory(prefix="keep-case-") if harness.kills else None
        wrapped: list[CrashingConnectors] = []
        escalations: list[int] = []

        def wrap(connectors: ConnectorSet) -> ConnectorSet:
            wrapped.append(CrashingConnectors(StandInConnectors(connectors)))
            return wrapped[-1]

        def observing(observe: Callable[[Observation], None] | None) -> Callable[..., None]:
            def tee(observation: Observation) -> None:
                if isinstance(observation, Escalated):
                    escalations.append(1)
                if observe is not None:
                    observe(observation)

            return tee

        def make_runtime(store: Any, connectors: Any, **options: Any) -> Runtime:
            options["observe"] = observing(options.get("observe"))
            return (harness.make_runtime or Runtime)(store, connectors, **options)

        try:
            installation = Installation.open(
                harness.store_url,
                plugins=harness.plugins,
                config=harness.config,
                clock=clock,
                deterministic=True,
                isolation=harness.isolation,
                doubles=None if folder is None else Path(folder.name) / "doubles.db",
                policy=harness.policy,
                wrap_connectors=wrap,
                make_runtime=make_runtime,
            )
        except BaseException:
            if folder is not None:
                folder.cleanup()
            raise
        world = cls(
            harness,
            clock,
            installation,
            wrapped[-1],
            folder,
            installation.scheduler(worker=harness.worker, lease_ttl_s=60.0, drain_s=math.inf),
        )
        world._escalations = escalations
        store = installation.store
        if isinstance(store, SupportsFaultInjection):
            store.fault_hook = world._store_point_reached
        return world

    _escalations: list[int] = field(default_factory=list)

    @property
    def escalated(self) -> int:
        """How many times a run was escalated to a person so far."""
        return len(self._escalations)

    @property
    def backing(self) -> str:
        """The file the doubles share with a killed host process."""
        if self.folder is None:
            raise ConfigurationError("this world keeps its doubles in memory")
        return str(Path(self.folder.name) / "doubles.db")

    def close(self) -> None:
        """Close the installation and remove the doubles' file."""
        try:
            self.installation.close()
        finally:
            if self.folder is not None:
                self.folder.cleanup()

    def _store_point_reached(self, name: str) -> None:
        if self.store_point is not None and name == self.store_point:
            self.store_point = None
            raise SimulatedCrash(f"killed at {name}")

    @property
    def stand_ins(self) -> StandInConnectors:
        """The connectors as the world sees them: doubles, live ones and stand-ins."""
        return cast(StandInConnectors, self.crashing.inner)

    def doubles(self) -> dict[str, ServiceDouble]:
        """The installation's doubles (built-in and plugin ones), by name; builds nothing."""
        return {
            name: connector
            for name, connector in self.installation.connectors.built().items()
            if isinstance(connector, ServiceDouble)
        }

    def effects(self, name: str, operation: str | None = None) -> list[Effect]:
        """What the double or stand-in `name` recorded, oldest first (of `operation`)."""
        if self.stand_ins.stands_in(name) or name in self.stand_ins.live:
            return self.stand_ins.effects(name, operation)
        return self.double(name).effects(operation)

    def recorded(self) -> dict[str, list[Effect]]:
        """Every double's and stand-in's recorded effects, by connector name."""
        found = {name: double.effects() for name, double in self.doubles().items()}
        found.update({made.name: made.effects() for made in self.stand_ins.stand_ins()})
        return found

    def seed(self, document: Any, *, replace: bool = False, source: str) -> list[str]:
        """Seed the doubles (`Installation.seed`) and the stand-ins (`StandInSeed`) named in
        `document`; the names seeded. `ConfigurationError` names `source` and what is wrong."""
        if not isinstance(document, dict):
            raise ConfigurationError(f"{source}: seed data maps connector names to their data")
        doubles: dict[str, Any] = {}
        seeded: list[str] = []
        for name, data in document.items():
            if name != "faults" and (self.stand_ins.stands_in(name) or name in self.stand_ins.live):
                self.stand_ins.seed(name, data, replace=replace, source=f"{source}: {name}")
                seeded.append(name)
            elif isinstance(data, StandInSeed):
                doubles[name] = data.model_dump(exclude_defaults=True)
            else:
                doubles[name] = data
        return [*self.installation.seed(doubles, replace=replace, source=source), *seeded]

    def double(self, name: str) -> ServiceDouble:
        """The double `name`; a `ConfigurationError` with a did-you-mean otherwise."""
        doubles = self.doubles()
        if name not in doubles:
            close = difflib.get_close_matches(name, list(doubles), n=1)
            hint = f"did you mean {close[0]}? " if close else ""
            raise ConfigurationError(
                f"no connector double named {name!r}; {hint}doubles: {', '.join(doubles)}"
            )
        return doubles[name]

    @property
    def runtime(self) -> Runtime:
        """The current host's runtime."""
        return self.installation.runtime

    def restart(self) -> None:
        """A new host on the same store and doubles; it recovers what the old one left."""
        self.installation.restart()
        self.scheduler = self.installation.scheduler(
            worker=self.harness.worker, lease_ttl_s=60.0, drain_s=math.inf
        )
        self.hosts += 1

    def deploy(self, source: str, *, filename: str | None = None) -> int:
        """Deploy `source` (the first time: learn the workflow's name); the version."""
        self.stand_ins.use(source)
        version = self.runtime.deploy(source, filename=filename)
        if not self.workflow:
            names = [record.name for record in self.installation.store.list_workflows()]
            if len(names) != 1:
                raise ConfigurationError(
                    f"the store of a case must start empty; it holds {', '.join(names)}"
                )
            self.workflow = names[0]
        return version

    def grant(self, permissions: list[str] | None) -> None:
        """Grant `permissions` (every declared one when None) to the workflow."""
        actions = self.installation.actions
        for permission in actions.permissions() if permissions is None else permissions:
            actions.check_permission(permission)
            self.installation.store.grant_permission(
                self.workflow, permission, actor=self.harness.source
            )

    def run(self, where: str) -> None:
        """Run the scheduler until nothing is due; a simulated crash restarts the host."""
        while True:
            try:
                for activity in self.scheduler.run_until_idle(max_steps=_MAX_STEPS):
                    self.trace.append(f"{where}: {activity.describe()}")
                return
            except SimulatedCrash as crash:
                self.trace.append(f"{where}: host crashed ({crash}); restarting")
                self.restart()

    def pass_time(self, until: dt.datetime, where: str) -> None:
        """Move the clock to `until`, jumping to each due time on the way and running."""
        self.run(where)
        while (upcoming := self.scheduler.next_due()) is not None and upcoming <= until:
            self.clock.advance((upcoming - self.clock()).total_seconds())
            self.trace.append(f"{where}: clock -> {self.clock():%Y-%m-%d %H:%M:%S}")
            self.run(where)
        self.clock.advance(max(0.0, (until - self.clock()).total_seconds()))
