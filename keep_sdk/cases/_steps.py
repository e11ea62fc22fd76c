"""Carrying out the steps of a case or scenario in its `World`."""

from __future__ import annotations

import datetime as dt
import math
import signal
import subprocess
import sys

from keep_sdk.cases._crash import SimulatedCrash
from keep_sdk.cases._expect import check
from keep_sdk.cases._host import NOT_KILLED, KillOrder
from keep_sdk.cases._model import Act, Kill, NotifyStep, Step
from keep_sdk.cases._result import Mismatch
from keep_sdk.cases._world import World
from keep_sdk.connectors.builtin import FaultKind
from keep_sdk.errors import ConfigurationError, KeepError
from keep_sdk.model import HostPolicy, RunRecord, RunStatus
from keep_sdk.stores import Publication, SupportsDurable

__all__ = ["do_step"]

_SELECTED = {
    "escalated": (RunStatus.PAUSED_RECONCILIATION,),
    "approval": (RunStatus.PAUSED_APPROVAL,),
    "transient": (RunStatus.PAUSED_TRANSIENT,),
    "waiting": (RunStatus.PAUSED_WAITING,),
    "timeout": (RunStatus.PAUSED_TIMEOUT,),
    "failed": (RunStatus.FAILED_LOGIC, RunStatus.FAILED_INTERNAL, RunStatus.CRASHED),
}


def do_step(world: World, step: Step, where: str) -> list[Mismatch]:
    """Carry out `step`; what went wrong (an expectation, a refused action) as mismatches.

    A step the world cannot carry out (an unknown double, no run to act on) is a
    `ConfigurationError`; a refused action is a mismatch unless the step expects it."""
    store = world.installation.store
    if step.publish is not None:
        p = step.publish
        store.publish(
            world.workflow,
            Publication(topic=p.topic, message_id=p.message_id, title=p.title, payload=p.payload),
        )
        world.trace.append(f"{where}: published {p.topic}/{p.message_id}")
    elif step.seed is not None:
        seeded = world.seed(step.seed, source=f"{where}: seed")
        world.trace.append(f"{where}: seeded {', '.join(seeded)}")
    elif step.fault is not None:
        f = step.fault
        double = world.double(f.connector)
        if f.kind == "clear":
            double.faults.clear()
        else:
            double.faults.inject(
                FaultKind(f.kind), operation=f.operation, times=f.times, delay_s=f.delay_s
            )
        world.trace.append(f"{where}: fault {f.connector}.{f.operation or '*'} {f.kind}")
    elif step.run is not None:
        world.run(where)
    elif step.advance is not None:
        world.clock.advance(step.advance)
        world.trace.append(f"{where}: clock +{step.advance:g}s")
        world.run(where)
    elif step.wait is not None:
        world.pass_time(world.clock() + dt.timedelta(seconds=step.wait), where)
    elif step.clock is not None:
        if step.clock < world.clock():
            raise ConfigurationError(
                f"{where}: clock {step.clock.isoformat()} is before the clock's time "
                f"{world.clock().isoformat()}; the clock only moves forward"
            )
        world.pass_time(step.clock, where)
    elif step.poll is not None:
        run = world.runtime.run_producer(world.workflow, step.poll)
        world.trace.append(f"{where}: polled {step.poll}: {run.status.value}")
        world.run(where)
    elif step.notify is not None:
        return _notify(world, step.notify, where)
    elif step.act is not None:
        return _act(world, step.act, where)
    elif step.deploy is not None:
        version = world.deploy(step.deploy)
        world.trace.append(f"{where}: deployed version {version}")
    elif step.crash is not None:
        world.store_point = step.crash.at
        world.crashing.crash = step.crash if step.crash.call is not None else None
        world.trace.append(f"{where}: the next run dies at {step.crash.at or step.crash.call}")
    elif step.kill is not None:
        return _kill(world, step.kill, where)
    elif step.restart:
        world.restart()
        world.trace.append(f"{where}: restarted the host")
    elif step.expect is not None:
        return check(world, step.expect, where)
    return []


def _policy(world: World) -> HostPolicy:
    return world.harness.policy or world.installation.config.policy


def _kill(world: World, point: Kill, where: str) -> list[Mismatch]:
    named = point.at or f"{point.when} of {point.call}"
    found: list[Mismatch] = []
    if point.advance:
        world.clock.advance(point.advance)
        world.trace.append(f"{where}: clock +{point.advance:g}s")
    if world.folder is None:
        world.store_point = point.at
        world.crashing.crash = point if point.call is not None else None
        dying = world.scheduler
        if point.worker != world.scheduler.worker:
            dying = world.installation.scheduler(
                worker=point.worker, lease_ttl_s=60.0, drain_s=math.inf
            )
        try:
            for activity in dying.run_until_idle(max_steps=500):
                world.trace.append(f"{where}: {activity.describe()}")
            found.append(Mismatch.note(where, f"the host never reached {named}"))
        except SimulatedCrash:
            world.trace.append(f"{where}: one process: the host died at {named}")
        world.store_point, world.crashing.crash = None, None
        world.restart()
        return found
    order = KillOrder(
        store_url=world.installation.store_url,
        backing=world.backing,
        now=world.clock(),
        policy=_policy(world),
        worker=point.worker,
        point=point,
    )
    child = subprocess.run(
        [sys.executable, "-m", "keep_sdk.cases._host"],
        input=order.model_dump_json(),
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    if child.returncode == -signal.SIGKILL:
        world.trace.append(f"{where}: the host process was SIGKILLed at {named}")
    elif child.returncode == NOT_KILLED:
        found.append(Mismatch.note(where, f"the host process never reached {named}"))
    else:
        tail = child.stderr.strip().splitlines()[-3:]
        found.append(
            Mismatch.note(
                where, f"the host process ended with {child.returncode}: {' / '.join(tail)}"
            )
        )
    world.restart()
    return found


def _notify(world: World, step: NotifyStep, where: str) -> list[Mismatch]:
    store = world.installation.store
    if not isinstance(store, SupportsDurable):
        raise ConfigurationError(f"{where}: the store keeps no durable operations")
    runs = store.list_runs(workflow=world.workflow)
    if step.run in ("waiting", "timeout"):
        status = RunStatus.PAUSED_WAITING if step.run == "waiting" else RunStatus.PAUSED_TIMEOUT
        runs = [r for r in runs if r.status is status]
    invocations = [i for r in runs if (i := store.invocation_for_run(r.id)) is not None]
    if not invocations:
        raise ConfigurationError(f"{where}: notify: no {step.run} run with a durable operation")
    invocation = invocations[-1] if step.run == "latest" else invocations[0]
    outcome = ""
    for _ in range(step.times):
        receipt = world.runtime.notify(
            invocation.correlation_key, step.result, source=world.harness.source
        )
        outcome = receipt.notification.outcome.value
        world.trace.append(f"{where}: notified {invocation.correlation_key}: {outcome}")
    if step.outcome is not None and outcome != step.outcome:
        return [Mismatch.note(where, f"the notification was {outcome}, not {step.outcome}")]
    return []


def _waits(run: RunRecord) -> bool:
    return run.status not in (RunStatus.COMMITTED, RunStatus.ACTIVE)


def _select(world: World, selector: str | None) -> RunRecord:
    runs = world.installation.store.list_runs(workflow=world.workflow)
    if selector is None:
        chosen = [r for r in runs if r.status is RunStatus.PAUSED_RECONCILIATION] or [
            r for r in runs if _waits(r)
        ]
        selector = "waiting or failed"
    else:
        wanted = _SELECTED.get(selector)
        chosen = [r for r in runs if wanted is None or r.status in wanted]
    if not chosen:
        raise ConfigurationError(f"no {selector} run to act on")
    return chosen[-1]


def _act(world: World, act: Act, where: str) -> list[Mismatch]:
    actions = world.installation.actions
    actor = world.harness.actor
    try:
        match act.action:
            case "grant" | "revoke":
                if not act.permission:
                    raise ConfigurationError(f"{where}: act {act.action} needs `permission`")
                actions.check_permission(act.permission)
                change = actions.grant if act.action == "grant" else actions.revoke
                change(world.workflow, act.permission, actor=actor)
            case "skip_event":
                if act.topic is None or act.message_id is None:
                    raise ConfigurationError(f"{where}: act skip_event needs topic and messageId")
                events = world.installation.store.events_by_ids(
                    world.workflow, act.topic, [act.message_id]
                )
                if not events:
                    raise ConfigurationError(
                        f"{where}: act skip_event: no event {act.topic}/{act.message_id}"
                    )
                actions.skip_event(events[0].id, actor=actor)
            case "pause":
                actions.pause(world.workflow, actor=actor)
            case "resume":
                actions.resume(world.workflow, actor=actor)
            case "extend":
                until = world.clock() + dt.timedelta(seconds=act.seconds)
                actions.extend(_select(world, act.run).id, until=until, actor=actor)
            case "supply":
                actions.supply_result(_select(world, act.run).id, act.result, actor=actor)
            case _:
                getattr(actions, act.action)(_select(world, act.run).id, actor=actor)
    except KeepError as exc:
        world.trace.append(f"{where}: {act.action} refused: {exc}")
        if act.error is None:
            return [Mismatch.note(where, f"{act.action} was refused: {exc}")]
        if act.error not in str(exc):
            return [
                Mismatch.note(
                    where, f"{act.action} was refused with {exc!s}, expected {act.error!r}"
                )
            ]
        return []
    world.trace.append(f"{where}: a person did {act.action}")
    if act.error is not None:
        return [Mismatch.note(where, f"{act.action} should have been refused ({act.error})")]
    return []
