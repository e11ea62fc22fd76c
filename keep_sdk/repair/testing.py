"""``keep test``: run a workflow's YAML cases on the real runtime and sandbox, with no
external effect, and compare what happened with what each case expects.

Each case gets a fresh ``memory://`` store, a clock that moves only when a step
says so (starting at `CASE_START`), and the built-in service doubles seeded with
the case's data: they answer reads from that data and record every mutation
instead of performing it. Runs are deterministic (``Date`` is the clock,
``Math.random`` seeded by the run), so a case gives the same result every time.
"""

from __future__ import annotations

import datetime as dt
import difflib
import json
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, JsonValue
from pydantic.alias_generators import to_camel

from keep_sdk.connectors import ConnectorSet
from keep_sdk.connectors.builtin import FaultKind, Gmail, ServiceDouble, Sheets, Slack
from keep_sdk.errors import ConfigurationError, KeepError
from keep_sdk.model import Event, LedgerEntry, RunRecord, RunStatus
from keep_sdk.plugins import KeepPlugins
from keep_sdk.repair.cases import (
    ActStep,
    CaseExpect,
    CaseFile,
    ExpectedMutation,
    ExpectedPublish,
    TestCase,
    TestStep,
    load_case_file,
)
from keep_sdk.runtime import PersonActions, Runtime
from keep_sdk.sandbox import InProcessIsolation
from keep_sdk.scheduler import Scheduler
from keep_sdk.stores import Publication, Store, open_store

__all__ = [
    "CASE_START",
    "CaseResult",
    "Mismatch",
    "is_subset",
    "run_case",
    "run_case_file",
    "select_cases",
    "workflow_source",
]

CASE_START = dt.datetime(2026, 11, 22, 9, 0, tzinfo=dt.UTC)
"""The clock of every case starts here (09:00 UTC)."""

_ACTOR = "keep-test"


class _Out(BaseModel):
    model_config = ConfigDict(
        alias_generator=to_camel, populate_by_name=True, frozen=True, extra="forbid"
    )


class Mismatch(_Out):
    """One expectation that did not hold: what, expected and actual values, and a diff."""

    what: str = Field(description="mutations, publishes, state.<handler>, runs, or error.")
    expected: JsonValue = None
    actual: JsonValue = None
    diff: str = Field(default="", description="A unified diff of the two, as JSON.")


class CaseResult(_Out):
    """How one case went."""

    name: str
    ok: bool
    mismatches: list[Mismatch] = Field(default_factory=list)
    mutations: list[JsonValue] = Field(
        default_factory=list, description="Every mutation the runs asked for, in order."
    )
    publishes: list[JsonValue] = Field(
        default_factory=list, description="Every event the runs published, in order."
    )
    runs: dict[str, int] = Field(default_factory=dict)

    def report(self) -> str:
        """The mismatches as text for people (empty when the case passed)."""
        parts = []
        for mismatch in self.mismatches:
            parts.append(f"{mismatch.what}:")
            body = mismatch.diff or f"expected {mismatch.expected!r}, got {mismatch.actual!r}"
            parts.extend("  " + line for line in body.splitlines())
        return "\n".join(parts)


class _Clock:
    def __init__(self, start: dt.datetime) -> None:
        self.now = start

    def __call__(self) -> dt.datetime:
        return self.now


def is_subset(expected: Any, actual: Any) -> bool:
    """Whether `actual` has everything `expected` has: objects by their given keys
    (recursively), arrays element by element with the same length, scalars equal."""
    if isinstance(expected, dict):
        return isinstance(actual, dict) and all(
            key in actual and is_subset(value, actual[key]) for key, value in expected.items()
        )
    if isinstance(expected, list):
        return (
            isinstance(actual, list)
            and len(expected) == len(actual)
            and all(is_subset(e, a) for e, a in zip(expected, actual, strict=True))
        )
    if isinstance(expected, bool) or isinstance(actual, bool):
        return expected is actual
    return bool(expected == actual)


def _diff(expected: Any, actual: Any) -> str:
    left = json.dumps(expected, indent=2, sort_keys=True, ensure_ascii=False).splitlines()
    right = json.dumps(actual, indent=2, sort_keys=True, ensure_ascii=False).splitlines()
    return "\n".join(difflib.unified_diff(left, right, "expected", "actual", lineterm="", n=2))


def _doubles(clock: _Clock) -> dict[str, ServiceDouble]:
    return {"gmail": Gmail(clock=clock), "sheets": Sheets(clock=clock), "slack": Slack(clock=clock)}


class _World:
    def __init__(self, source: str, case: TestCase, cases: CaseFile, filename: str) -> None:
        self.clock = _Clock(CASE_START)
        self.store: Store = open_store("memory://", clock=self.clock)
        self.doubles = _doubles(self.clock)
        seeds = {**cases.connectors, **case.connectors}
        for name, data in seeds.items():
            self.double(name).seed(data)
        plugins = KeepPlugins(load_entry_points=False)
        self.runtime = Runtime(
            self.store,
            ConnectorSet(list(self.doubles.values())),
            load_workflow=plugins.load_workflow,
            now=self.clock,
            deterministic=True,
            isolation=InProcessIsolation(),
        )
        self.actions = PersonActions(self.runtime)
        self.scheduler = Scheduler(self.runtime, worker=_ACTOR, clock=self.clock)
        self.workflow = self._deploy(source, filename)
        grants = case.grants if case.grants is not None else cases.grants
        for permission in self.actions.permissions() if grants is None else grants:
            self.actions.check_permission(permission)
            self.store.grant_permission(self.workflow, permission, actor=_ACTOR)

    def _deploy(self, source: str, filename: str) -> str:
        self.runtime.deploy(source, filename=filename)
        [record] = self.store.list_workflows()
        return record.name

    def double(self, name: str) -> ServiceDouble:
        if name not in self.doubles:
            close = difflib.get_close_matches(name, list(self.doubles), n=1)
            hint = f"did you mean {close[0]}? " if close else ""
            raise ConfigurationError(
                f"no connector double named {name!r}; {hint}doubles: {', '.join(self.doubles)}"
            )
        return self.doubles[name]

    def step(self, step: TestStep) -> None:
        if step.publish is not None:
            p = step.publish
            self.store.publish(
                self.workflow,
                Publication(
                    topic=p.topic, message_id=p.message_id, title=p.title, payload=p.payload
                ),
            )
        elif step.run is not None:
            self.scheduler.run_until_idle(max_steps=1_000)
        elif step.advance is not None:
            self.clock.now += dt.timedelta(seconds=step.advance)
            self.scheduler.run_until_idle(max_steps=1_000)
        elif step.fault is not None:
            f = step.fault
            self.double(f.connector).faults.inject(
                FaultKind(f.kind), operation=f.operation, times=f.times
            )
        elif step.act is not None:
            self._act(step.act)

    def _act(self, act: ActStep) -> None:
        if act.action in ("grant", "revoke"):
            if not act.permission:
                raise ConfigurationError(f"act {act.action} needs `permission`")
            self.actions.check_permission(act.permission)
            if act.action == "grant":
                self.actions.grant(self.workflow, act.permission, actor=_ACTOR)
            else:
                self.actions.revoke(self.workflow, act.permission, actor=_ACTOR)
            return
        if act.action == "skip_event":
            events = [
                e
                for e in self.store.list_events(self.workflow, topic=act.topic)
                if e.message_id == act.message_id
            ]
            if not events:
                raise ConfigurationError(
                    f"act skip_event: no event {act.topic}/{act.message_id} was published"
                )
            self.actions.skip_event(events[0].id, actor=_ACTOR)
            return
        waiting = [r for r in self.store.list_runs(workflow=self.workflow) if _waits(r)]
        if not waiting:
            raise ConfigurationError(f"act {act.action}: no run waits for a person or failed")
        run = waiting[-1]
        getattr(self.actions, act.action)(run.id, actor=_ACTOR)


def _waits(run: RunRecord) -> bool:
    return run.status not in (RunStatus.COMMITTED, RunStatus.ACTIVE)


def _mutation(entry: LedgerEntry) -> JsonValue:
    return {
        "call": f"{entry.connector}.{entry.operation}",
        "arguments": entry.params,
        "status": entry.status.value,
    }


def _publish(event: Event) -> JsonValue:
    return {
        "topic": event.topic,
        "messageId": event.message_id,
        "title": event.title,
        "payload": event.payload,
    }


def _match_mutation(expected: ExpectedMutation, actual: Any) -> bool:
    return (
        expected.call == actual["call"]
        and (expected.arguments is None or is_subset(expected.arguments, actual["arguments"]))
        and (expected.status is None or expected.status == actual["status"])
    )


def _match_publish(expected: ExpectedPublish, actual: Any) -> bool:
    return (
        expected.topic == actual["topic"]
        and (expected.message_id is None or expected.message_id == actual["messageId"])
        and (expected.title is None or expected.title == actual["title"])
        and (expected.payload is None or is_subset(expected.payload, actual["payload"]))
    )


def _compare_lists(
    what: str,
    expected: Sequence[ExpectedMutation] | Sequence[ExpectedPublish],
    actual: list[JsonValue],
    matches: Any,
) -> Mismatch | None:
    if len(expected) == len(actual) and all(
        matches(e, a) for e, a in zip(expected, actual, strict=True)
    ):
        return None
    wanted = [e.model_dump(mode="json", by_alias=True, exclude_none=True) for e in expected]
    shown = [_narrow(e, a) for e, a in zip(wanted, actual, strict=False)] + actual[len(wanted) :]
    return Mismatch(what=what, expected=wanted, actual=actual, diff=_diff(wanted, shown))


def _narrow(expected: Any, actual: Any) -> Any:
    """`actual` cut to the keys `expected` names, so a diff shows only what was compared."""
    if isinstance(expected, dict) and isinstance(actual, dict):
        return {k: _narrow(expected[k], actual[k]) for k in expected if k in actual}
    if isinstance(expected, list) and isinstance(actual, list) and len(expected) == len(actual):
        return [_narrow(e, a) for e, a in zip(expected, actual, strict=True)]
    return actual


def _check(world: _World, expect: CaseExpect, result: dict[str, Any]) -> list[Mismatch]:
    found: list[Mismatch] = []
    if expect.mutations is not None:
        bad = _compare_lists("mutations", expect.mutations, result["mutations"], _match_mutation)
        found += [bad] if bad else []
    if expect.publishes is not None:
        bad = _compare_lists("publishes", expect.publishes, result["publishes"], _match_publish)
        found += [bad] if bad else []
    for handler, wanted in (expect.state or {}).items():
        try:
            record = world.store.get_handler(world.workflow, handler)
        except KeepError:
            found.append(Mismatch(what=f"state.{handler}", expected=wanted, actual=None,
                                  diff=f"the workflow has no handler {handler!r}"))  # fmt: skip
            continue
        actual = record.state if record.has_state else None
        if actual != wanted:
            found.append(
                Mismatch(
                    what=f"state.{handler}",
                    expected=wanted,
                    actual=actual,
                    diff=_diff(wanted, actual),
                )
            )
    if expect.runs is not None:
        counts = result["runs"]
        shown = {status: counts.get(status, 0) for status in expect.runs}
        if shown != expect.runs:
            found.append(
                Mismatch(
                    what="runs",
                    expected=dict(expect.runs),
                    actual=counts,
                    diff=_diff(dict(expect.runs), shown),
                )
            )
    return found


def run_case(source: str, case: TestCase, cases: CaseFile, *, filename: str = "") -> CaseResult:
    """Run one case from scratch and compare; a script or step error is a mismatch."""
    world: _World | None = None
    try:
        world = _World(source, case, cases, filename)
        for step in case.steps:
            world.step(step)
        runs = world.store.list_runs(workflow=world.workflow)
        observed: dict[str, Any] = {
            "mutations": [_mutation(e) for e in world.store.list_ledger(workflow=world.workflow)],
            "publishes": [
                _publish(e)
                for e in world.store.list_events(world.workflow)
                if e.created_by is not None
            ],
            "runs": dict(Counter(r.status.value for r in runs)),
        }
        mismatches = _check(world, case.expect, observed)
    except ConfigurationError:
        raise
    except KeepError as exc:
        return CaseResult(
            name=case.name,
            ok=False,
            mismatches=[Mismatch(what="error", actual=str(exc), diff=str(exc))],
        )
    finally:
        if world is not None:
            world.store.close()
    return CaseResult(
        name=case.name,
        ok=not mismatches,
        mismatches=mismatches,
        mutations=observed["mutations"],
        publishes=observed["publishes"],
        runs=observed["runs"],
    )


def select_cases(cases: CaseFile, names: Sequence[str]) -> list[TestCase]:
    """The cases named (all when none is); an unknown name is a `ConfigurationError`."""
    if not names:
        return list(cases.cases)
    known = {case.name: case for case in cases.cases}
    chosen = []
    for name in names:
        if name not in known:
            close = difflib.get_close_matches(name, list(known), n=1)
            hint = f"did you mean {close[0]!r}? " if close else ""
            raise ConfigurationError(
                f"no case named {name!r}; {hint}cases: {', '.join(repr(n) for n in known)}"
            )
        chosen.append(known[name])
    return chosen


def workflow_source(path: Path, cases: CaseFile) -> tuple[Path, str]:
    """The script a case file tests: its path and source."""
    script = (path.parent / cases.workflow).resolve()
    try:
        return script, script.read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigurationError(
            f"{path}: cannot read the workflow {cases.workflow!r} ({exc.strerror or exc}); "
            "`workflow` is a path relative to the case file"
        ) from None


def run_case_file(
    path: Path, names: Sequence[str] = (), *, source: str | None = None
) -> list[CaseResult]:
    """Run the cases of the file at `path` (those named, or all). `source` replaces the
    script the file names (a repaired version under test)."""
    cases = load_case_file(path)
    chosen = select_cases(cases, names)
    script, text = workflow_source(path, cases) if source is None else (path, source)
    return [run_case(text, case, cases, filename=script.name) for case in chosen]
