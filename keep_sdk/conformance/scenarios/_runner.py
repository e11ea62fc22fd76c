"""Run a `Scenario` through the reference scheduler and compare the end state.

The world of a scenario is the built-in doubles (gmail, sheets, slack), a
store (``memory://`` by default, any URL works) and a manual clock. A "host"
is a runtime plus a scheduler over them; a crash abandons the host in the
middle of a run (nothing of it runs on) and starts a new one on the same store
and the same world, as a supervisor restarting a killed process would. A kill
runs the host in a real subprocess and SIGKILLs it at the point (the doubles are
then backed by a file both processes share).

`make_runtime` lets another runtime be held to the same scenarios: it gets the
store, connectors, policy, clock and plugins and returns a `Runtime`-compatible
object.
"""

from __future__ import annotations

import datetime as dt
import signal
import subprocess
import sys
import tempfile
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

import yaml
from pydantic import JsonValue, ValidationError

from keep_sdk.conformance.scenarios._kill import NOT_KILLED, KillOrder, doubles
from keep_sdk.conformance.scenarios._model import (
    Act,
    Crash,
    Expectation,
    Kill,
    NotifyStep,
    Scenario,
    Step,
)
from keep_sdk.conformance.support import ManualClock
from keep_sdk.connectors import Connector, ConnectorSet
from keep_sdk.connectors.builtin import Approvals, Gmail, Jobs, ServiceDouble, Sheets, Slack
from keep_sdk.contract.durable import DurableAnswer, InvocationContext
from keep_sdk.contract.observations import Escalated
from keep_sdk.errors import ConfigurationError, KeepError
from keep_sdk.model import (
    BackoffPolicy,
    HostPolicy,
    LedgerStatus,
    RunRecord,
    RunStatus,
    SandboxLimits,
    explain_validation_error,
)
from keep_sdk.plugins import KeepPlugins, Observation
from keep_sdk.runtime import PersonActions, Runtime
from keep_sdk.sandbox import InProcessIsolation
from keep_sdk.scheduler import Scheduler
from keep_sdk.stores import (
    Publication,
    Store,
    SupportsDurable,
    SupportsFaultInjection,
    open_store,
)

__all__ = [  # noqa: RUF022 (plain sorted(), as the facade tests check)
    "ALL_GRANTS",
    "RuntimeFactory",
    "SCENARIO_START",
    "ScenarioResult",
    "SimulatedCrash",
    "builtin_scenarios_dir",
    "load_scenario",
    "load_scenarios",
    "run_scenario",
]

SCENARIO_START = dt.datetime(2026, 11, 22, 9, 0, tzinfo=dt.UTC)
"""The manual clock's start: 09:00 UTC on a Sunday."""

ALL_GRANTS = (
    "approvals.request",
    "gmail.read",
    "gmail.send",
    "jobs.submit",
    "sheets.read",
    "sheets.write",
    "slack.write",
)
"""The grants a scenario gets when it lists none."""

RuntimeFactory = Callable[..., Runtime]


class SimulatedCrash(BaseException):
    """The host dies here. A BaseException, so no handler in the host can catch it."""


def load_scenario(path: Path) -> Scenario:
    """Read and check one scenario file; `ConfigurationError` names what is wrong."""
    try:
        raw = yaml.safe_load(path.read_text(encoding="utf-8"))
    except (OSError, yaml.YAMLError) as exc:
        raise ConfigurationError(f"cannot read scenario {path}: {exc}") from None
    try:
        return Scenario.model_validate(raw)
    except ValidationError as exc:
        problems = "\n  ".join(explain_validation_error(exc, subject=str(path)))
        raise ConfigurationError(f"scenario {path} is malformed:\n  {problems}") from None


def builtin_scenarios_dir() -> Path:
    """Where the scenarios that ship with keep-sdk are.

    In a wheel they are package data (``keep_sdk/conformance/scenarios/data``);
    in a source checkout they are ``fixtures/scenarios``.
    """
    packaged = Path(__file__).parent / "data"
    if packaged.is_dir():
        return packaged
    return Path(__file__).parents[3] / "fixtures" / "scenarios"


def load_scenarios(directory: Path | None = None) -> list[tuple[Path, Scenario]]:
    """Every ``*.yaml`` scenario in `directory` (the built-in ones by default), by file name."""
    folder = directory if directory is not None else builtin_scenarios_dir()
    return [(p, load_scenario(p)) for p in sorted(folder.glob("*.yaml"))]


@dataclass
class ScenarioResult:
    """What a scenario run found: mismatches (empty when it passed) and a trace."""

    name: str
    mismatches: list[str] = field(default_factory=list)
    trace: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        """True when every expectation held."""
        return not self.mismatches

    def report(self) -> str:
        """The mismatches and the trace of what happened, for a failing test."""
        lines = [f"scenario {self.name}: {len(self.mismatches)} mismatch(es)"]
        lines += [f"  - {m}" for m in self.mismatches]
        lines += ["trace:"] + [f"  {t}" for t in self.trace]
        return "\n".join(lines)


def _policy(overrides: dict[str, Any]) -> HostPolicy:
    values: dict[str, Any] = {
        "sandbox": SandboxLimits(cpu_time_s=2.0, wall_time_s=5.0),
        "backoff": BackoffPolicy(base_s=10.0, cap_s=300.0, jitter=0.0),
        "reconcile_backoff": BackoffPolicy(base_s=30.0, cap_s=300.0, jitter=0.0),
        "reconcile_attempts": 3,
        "mutation_timeout_s": 5.0,
    }
    values.update(overrides)
    return HostPolicy.model_validate(values)


class _CrashingConnectors(ConnectorSet):
    """The doubles, able to kill the host right before or after one operation's effect."""

    crash: Crash | None = None

    def invoke(
        self,
        connector: str,
        js_name: str,
        arguments: Any,
        *,
        idempotency_key: str | None = None,
    ) -> JsonValue:
        armed = self.crash
        target = armed is not None and armed.call == f"{connector}.{js_name}"
        if target and armed is not None and armed.when == "before_effect":
            self.crash = None
            raise SimulatedCrash(f"killed before {connector}.{js_name}")
        result = super().invoke(connector, js_name, arguments, idempotency_key=idempotency_key)
        if target:
            self.crash = None
            raise SimulatedCrash(f"killed after {connector}.{js_name}")
        return result

    def __getitem__(self, name: str) -> Connector:
        connector = super().__getitem__(name)
        armed = self.crash
        if armed is None or armed.call is None or armed.call.partition(".")[0] != name:
            return connector
        return cast(Connector, _CrashingStart(self, connector))


class _CrashingStart:
    """A connector whose durable ``start`` (``call: approvals.request``) or ``poll``
    (``call: jobs.poll:submit``) kills the host before or after its effect."""

    def __init__(self, owner: _CrashingConnectors, connector: Connector) -> None:
        self._owner = owner
        self._connector = connector

    def __getattr__(self, name: str) -> Any:
        return getattr(self._connector, name)

    def start(self, js_name: str, arguments: Any, invocation: InvocationContext) -> DurableAnswer:
        return self._call(
            f"{self._connector.name}.{js_name}",
            lambda: self._connector.start(js_name, arguments, invocation),
        )

    def poll(self, js_name: str, arguments: Any, invocation: InvocationContext) -> DurableAnswer:
        return self._call(
            f"{self._connector.name}.poll:{js_name}",
            lambda: self._connector.poll(js_name, arguments, invocation),
        )

    def _call(self, what: str, call: Callable[[], DurableAnswer]) -> DurableAnswer:
        """`call`, unless the armed crash names `what`: then crash before or after it."""
        armed = self._owner.crash
        if armed is None or armed.call != what:
            return call()
        self._owner.crash = None
        if armed.when == "before_effect":
            raise SimulatedCrash(f"killed before {what}")
        call()
        raise SimulatedCrash(f"killed after {what}")


class _World:
    """The store, the doubles, the clock and the current host of one scenario."""

    def __init__(
        self, scenario: Scenario, store_url: str, make_runtime: RuntimeFactory | None
    ) -> None:
        self.scenario = scenario
        self.store_url = store_url
        self.clock = ManualClock(SCENARIO_START)
        self.store: Store = open_store(store_url, clock=self.clock)
        self.folder: tempfile.TemporaryDirectory[str] | None = None
        self.doubles: dict[str, ServiceDouble] = {
            "approvals": Approvals(clock=self.clock),
            "jobs": Jobs(clock=self.clock),
            "gmail": Gmail(clock=self.clock),
            "sheets": Sheets(clock=self.clock),
            "slack": Slack(clock=self.clock),
        }
        if self.kills_processes:
            self.folder = tempfile.TemporaryDirectory(prefix="keep-scenario-")
            self.doubles = doubles(self.backing, self.clock)
        for name, data in scenario.connectors.items():
            self.double(name).seed(data)
        self.connectors = _CrashingConnectors(list(self.doubles.values()))
        self.policy = _policy(scenario.policy)
        self.make_runtime = make_runtime
        self.store_point: str | None = None
        self.escalations = 0
        self.hosts = 0
        self.runtime, self.scheduler = self._start_host()
        self.workflow = ""
        if isinstance(self.store, SupportsFaultInjection):
            self.store.fault_hook = self._store_point_reached

    @property
    def kills_processes(self) -> bool:
        """Whether a `kill` step runs a real host process (the store outlives this one)."""
        shared = not self.store_url.startswith("memory:")
        return shared and any(step.kill is not None for step in self.scenario.steps)

    @property
    def backing(self) -> str:
        """The file the doubles share with a killed host process."""
        assert self.folder is not None
        return str(Path(self.folder.name) / "doubles.db")

    def close(self) -> None:
        """Close the store and remove the doubles' file."""
        self.store.close()
        if self.folder is not None:
            self.folder.cleanup()

    def _store_point_reached(self, name: str) -> None:
        if self.store_point is not None and name == self.store_point:
            self.store_point = None
            raise SimulatedCrash(f"killed at {name}")

    def double(self, name: str) -> ServiceDouble:
        if name not in self.doubles:
            raise ConfigurationError(
                f"scenario {self.scenario.name}: no double named {name!r}; "
                f"doubles: {', '.join(self.doubles)}"
            )
        return self.doubles[name]

    def _start_host(self) -> tuple[Runtime, Scheduler]:
        world = self

        class Recorder:
            from keep_sdk.plugins import hookimpl

            @hookimpl
            def observe(self, observation: Observation) -> None:
                if isinstance(observation, Escalated):
                    world.escalations += 1

        plugins = KeepPlugins(load_entry_points=False)
        plugins.register(Recorder(), name="scenario-recorder")
        options: dict[str, Any] = {
            "policy": self.policy,
            "load_workflow": plugins.load_workflow,
            "observe": plugins.notify,
            "now": self.clock,
            "deterministic": True,
            "isolation": InProcessIsolation(),
        }
        factory = self.make_runtime or Runtime
        runtime = factory(self.store, self.connectors, **options)
        self.hosts += 1
        return runtime, Scheduler(runtime, worker="scenario-host", lease_ttl_s=60.0)

    def restart(self) -> None:
        """A new host on the same store and world; it recovers what the old one left active."""
        self.runtime, self.scheduler = self._start_host()


def run_scenario(
    scenario: Scenario,
    *,
    store_url: str = "memory://",
    make_runtime: RuntimeFactory | None = None,
) -> ScenarioResult:
    """Run `scenario` and check every expectation; never raises for a mismatch."""
    world = _World(scenario, store_url, make_runtime)
    result = ScenarioResult(scenario.name)
    try:
        world.workflow = _deploy(world, scenario.script)
        for permission in ALL_GRANTS if scenario.grants is None else scenario.grants:
            world.store.grant_permission(world.workflow, permission, actor="scenario")
        for number, step in enumerate(scenario.steps, 1):
            _step(world, step, number, result)
        _check(world, scenario.expect, "end state", result)
    finally:
        world.close()
    return result


def _deploy(world: _World, source: str) -> str:
    from keep_sdk.workflow import load_workflow

    workflow = load_workflow(source, connectors=world.connectors.manifest(), policy=world.policy)
    world.runtime.deploy(source)
    if not workflow.name:
        raise ConfigurationError(f"scenario {world.scenario.name}: the script declares no name")
    return workflow.name


def _step(world: _World, step: Step, number: int, result: ScenarioResult) -> None:
    where = f"step {number}"
    if step.publish is not None:
        p = step.publish
        world.store.publish(
            world.workflow,
            Publication(topic=p.topic, message_id=p.message_id, title=p.title, payload=p.payload),
        )
        result.trace.append(f"{where}: published {p.topic}/{p.message_id}")
    elif step.fault is not None:
        f = step.fault
        double = world.double(f.connector)
        if f.kind == "clear":
            double.faults.clear()
        else:
            double.faults.inject(f.kind, operation=f.operation, times=f.times, delay_s=f.delay_s)
        result.trace.append(f"{where}: fault {f.connector}.{f.operation or '*'} {f.kind}")
    elif step.seed is not None:
        for name, data in step.seed.items():
            world.double(name).seed(data)
        result.trace.append(f"{where}: seeded {', '.join(step.seed)}")
    elif step.run is not None:
        _run(world, where, result)
    elif step.advance is not None:
        world.clock.advance(step.advance)
        result.trace.append(f"{where}: clock +{step.advance:g}s")
        _run(world, where, result)
    elif step.wait is not None:
        _wait(world, step.wait, where, result)
    elif step.crash is not None:
        if step.crash.at is not None:
            world.store_point = step.crash.at
        world.connectors.crash = step.crash if step.crash.call is not None else None
        result.trace.append(f"{where}: the next run dies at {step.crash.at or step.crash.call}")
    elif step.kill is not None:
        _kill(world, step.kill, where, result)
    elif step.restart:
        world.restart()
        result.trace.append(f"{where}: restarted the host")
    elif step.act is not None:
        _act(world, step.act, where, result)
    elif step.deploy is not None:
        version = world.runtime.deploy(step.deploy)
        result.trace.append(f"{where}: deployed version {version}")
    elif step.notify is not None:
        _notify(world, step.notify, where, result)
    elif step.expect is not None:
        _check(world, step.expect, where, result)


def _kill(world: _World, point: Kill, where: str, result: ScenarioResult) -> None:
    named = point.at or f"{point.when} of {point.call}"
    if point.advance:
        world.clock.advance(point.advance)
        result.trace.append(f"{where}: clock +{point.advance:g}s")
    if not world.kills_processes:
        world.store_point = point.at
        world.connectors.crash = point if point.call is not None else None
        dying = world.scheduler
        if point.worker != world.scheduler.worker:
            dying = Scheduler(world.runtime, worker=point.worker, lease_ttl_s=60.0)
        try:
            for activity in dying.run_until_idle(max_steps=500):
                result.trace.append(f"{where}: {activity.describe()}")
            result.mismatches.append(f"{where}: the host never reached {named}")
        except SimulatedCrash:
            result.trace.append(f"{where}: one process (memory://): the host died at {named}")
        world.store_point, world.connectors.crash = None, None
        world.restart()
        return
    order = KillOrder(
        store_url=world.store_url,
        backing=world.backing,
        now=world.clock(),
        policy=world.policy,
        worker=point.worker,
        point=point,
    )
    child = subprocess.run(
        [sys.executable, "-m", "keep_sdk.conformance.scenarios._kill"],
        input=order.model_dump_json(),
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    if child.returncode == -signal.SIGKILL:
        result.trace.append(f"{where}: the host process was SIGKILLed at {named}")
    elif child.returncode == NOT_KILLED:
        result.mismatches.append(f"{where}: the host process never reached {named}")
    else:
        tail = child.stderr.strip().splitlines()[-3:]
        result.mismatches.append(
            f"{where}: the host process ended with {child.returncode}: {' / '.join(tail)}"
        )
    world.restart()


def _notify(world: _World, step: NotifyStep, where: str, result: ScenarioResult) -> None:
    store = world.store
    if not isinstance(store, SupportsDurable):
        raise ConfigurationError(f"scenario {world.scenario.name}: the store keeps no invocations")
    runs = store.list_runs(workflow=world.workflow)
    if step.run in ("waiting", "timeout"):
        status = RunStatus.PAUSED_WAITING if step.run == "waiting" else RunStatus.PAUSED_TIMEOUT
        runs = [r for r in runs if r.status is status]
    invocations = [i for r in runs if (i := store.invocation_for_run(r.id)) is not None]
    if not invocations:
        raise ConfigurationError(f"{where}: no {step.run} run with a durable operation")
    invocation = invocations[-1] if step.run == "latest" else invocations[0]
    for _ in range(step.times):
        receipt = world.runtime.notify(invocation.correlation_key, step.result, source="scenario")
        outcome = receipt.notification.outcome.value
        result.trace.append(f"{where}: notified {invocation.correlation_key}: {outcome}")
    if step.outcome is not None and outcome != step.outcome:
        result.mismatches.append(f"{where}: the notification was {outcome}, not {step.outcome}")


def _run(world: _World, where: str, result: ScenarioResult) -> None:
    while True:
        try:
            for activity in world.scheduler.run_until_idle(max_steps=500):
                result.trace.append(f"{where}: {activity.describe()}")
            return
        except SimulatedCrash as crash:
            result.trace.append(f"{where}: host crashed ({crash}); restarting")
            world.restart()


def _wait(world: _World, seconds: float, where: str, result: ScenarioResult) -> None:
    until = world.clock() + dt.timedelta(seconds=seconds)
    _run(world, where, result)
    while (upcoming := world.scheduler.next_due()) is not None and upcoming <= until:
        world.clock.advance((upcoming - world.clock()).total_seconds())
        result.trace.append(f"{where}: clock -> {world.clock():%H:%M:%S}")
        _run(world, where, result)
    world.clock.advance(max(0.0, (until - world.clock()).total_seconds()))


def _select(world: _World, selector: str) -> RunRecord:
    runs = world.store.list_runs(workflow=world.workflow)
    wanted = {
        "escalated": (RunStatus.PAUSED_RECONCILIATION,),
        "approval": (RunStatus.PAUSED_APPROVAL,),
        "transient": (RunStatus.PAUSED_TRANSIENT,),
        "waiting": (RunStatus.PAUSED_WAITING,),
        "timeout": (RunStatus.PAUSED_TIMEOUT,),
        "failed": (RunStatus.FAILED_LOGIC, RunStatus.FAILED_INTERNAL, RunStatus.CRASHED),
    }.get(selector)
    chosen = [r for r in runs if wanted is None or r.status in wanted]
    if not chosen:
        raise ConfigurationError(f"no {selector} run to act on")
    return chosen[-1]


def _act(world: _World, act: Act, where: str, result: ScenarioResult) -> None:
    actions = PersonActions(world.runtime)
    try:
        match act.action:
            case "skip_event":
                assert act.topic is not None
                assert act.message_id is not None
                [event] = world.store.events_by_ids(world.workflow, act.topic, [act.message_id])
                actions.skip_event(event.id, actor="person")
            case "try_again":
                actions.try_again(_select(world, act.run).id, actor="person")
            case "didnt_happen":
                actions.didnt_happen(_select(world, act.run).id, actor="person")
            case "skip":
                actions.skip(_select(world, act.run).id, actor="person")
            case "retry":
                actions.retry(_select(world, act.run).id, actor="person")
            case "grant":
                assert act.permission is not None
                actions.grant(world.workflow, act.permission, actor="person")
            case "pause":
                actions.pause(world.workflow, actor="person")
            case "resume":
                actions.resume(world.workflow, actor="person")
            case "cancel":
                actions.cancel(_select(world, act.run).id, actor="person")
            case "extend":
                until = world.clock() + dt.timedelta(seconds=act.seconds)
                actions.extend(_select(world, act.run).id, until=until, actor="person")
            case "start_again":
                actions.start_again(_select(world, act.run).id, actor="person")
            case "supply":
                actions.supply_result(_select(world, act.run).id, act.result, actor="person")
            case "skip_wait":
                actions.skip_wait(_select(world, act.run).id, actor="person")
    except KeepError as exc:
        if act.error is None:
            result.mismatches.append(f"{where}: {act.action} was refused: {exc}")
        elif act.error not in str(exc):
            result.mismatches.append(
                f"{where}: {act.action} was refused with {exc!s}, expected {act.error!r}"
            )
        result.trace.append(f"{where}: {act.action} refused: {exc}")
        return
    if act.error is not None:
        result.mismatches.append(f"{where}: {act.action} should have been refused ({act.error})")
    result.trace.append(f"{where}: a person did {act.action}")


def _check(world: _World, expect: Expectation, where: str, result: ScenarioResult) -> None:
    store, workflow = world.store, world.workflow
    found: list[str] = []

    def compare(what: str, actual: Any, wanted: Any) -> None:
        if actual != wanted:
            found.append(f"{where}: {what}: expected {wanted!r}, found {actual!r}")

    if expect.events is not None:
        for topic, wanted_statuses in expect.events.items():
            events = {
                e.message_id: e.status.value for e in store.list_events(workflow, topic=topic)
            }
            compare(f"events of {topic}", events, wanted_statuses)
    runs = store.list_runs(workflow=workflow)
    if expect.runs is not None:
        counts = Counter(r.status.value for r in runs)
        compare("runs by status", {s: counts.get(s, 0) for s in expect.runs}, expect.runs)
    if expect.ledger is not None:
        compare(
            "ledger", [e.status.value for e in store.list_ledger(workflow=workflow)], expect.ledger
        )
    if expect.effects is not None:
        actual = {}
        for name in expect.effects:
            connector, _, operation = name.partition(".")
            actual[name] = len(world.double(connector).effects(operation))
        compare("external effects", actual, expect.effects)
    if expect.rows is not None:
        sheets = world.double("sheets").snapshot()["spreadsheets"]
        actual_rows = {
            sid: [r["values"] for r in sheets.get(sid, {}).get("rows", [])] for sid in expect.rows
        }
        compare("sheet rows", actual_rows, expect.rows)
    if expect.messages is not None:
        channels = world.double("slack").snapshot()["channels"]
        actual_messages = {c: [m["text"] for m in channels.get(c, [])] for c in expect.messages}
        compare("chat messages", actual_messages, expect.messages)
    if expect.state is not None:
        for handler, state in expect.state.items():
            compare(f"state of {handler}", store.get_handler(workflow, handler).state, state)
    if expect.audit is not None:
        compare(
            "audit log",
            [a.action for a in store.audit_log(workflow=workflow) if a.actor == "person"],
            expect.audit,
        )
    if expect.escalations is not None:
        compare("escalations", world.escalations, expect.escalations)
    if expect.mutation_results is not None:
        for handler, statuses in expect.mutation_results.items():
            seen = [
                r.mutation_result.status if r.mutation_result else "none"
                for r in runs
                if r.handler == handler and r.status is RunStatus.COMMITTED
            ]
            compare(f"mutationResult given to next of {handler}", seen, statuses)
    _invariants(world, where, found)
    result.mismatches.extend(found)


def _invariants(world: _World, where: str, found: list[str]) -> None:
    """What must hold after every step, whatever the scenario says."""
    seen: dict[str, str] = {}
    for entry in world.store.list_ledger(workflow=world.workflow):
        if entry.status is not LedgerStatus.APPLIED:
            continue
        root = _root(world.store, entry.run_id)
        if root in seen:
            found.append(
                f"{where}: runs {seen[root]} and {entry.run_id} of one chain both "
                "applied a mutation"
            )
        seen[root] = entry.run_id
    for double in world.doubles.values():
        keys = Counter(e["idempotencyKey"] for e in double.effects())
        twice = [k for k, n in keys.items() if n > 1]
        if twice:
            found.append(f"{where}: {double.name} applied one idempotency key twice: {twice}")


def _root(store: Store, run_id: str) -> str:
    run = store.get_run(run_id)
    while run.retry_of is not None:
        run = store.get_run(run.retry_of)
    return run.id
