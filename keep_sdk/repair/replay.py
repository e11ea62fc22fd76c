"""``keep replay``: run a new version of a script against the recorded traces of past runs.

Every read the new version makes (a connector read, ``peek``, ``getByIds``) is
answered from the recorded trace of the same phase of the same run: no
connector is called and nothing is written to the store. The mutation it asks
for and what it publishes are compared with what the recorded run did:

- ``same``: the same mutation (operation and arguments), publishes and state;
- ``changed``: a mutation, publish, reservation or state differs (with a diff);
- ``would-fail``: the new version throws, breaks a rule of its phase, or asks
  for a mutation the workflow is not granted (the permission is reported);
- ``unreplayable``: it asks for a read the trace does not hold (reported, never
  called), or the trace left the arguments or result out (the trace budget).

Only committed runs are replayed: their trace is the whole story of what the
run read and did.
"""

from __future__ import annotations

import datetime as dt
import difflib
import hashlib
import json
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, JsonValue, ValidationError, computed_field
from pydantic.alias_generators import to_camel

from keep_sdk.contract.manifest import Manifest
from keep_sdk.contract.workflow import ConsumerManifest, WorkflowManifest
from keep_sdk.errors import ConfigurationError, InternalError, KeepError, NotFound
from keep_sdk.model import (
    HandlerKind,
    HandlerPhase,
    HostPolicy,
    MutationNone,
    PhaseTrace,
    PublishRequest,
    RunRecord,
    RunStatus,
    TraceCall,
)
from keep_sdk.runtime.checks import check_prepare_result
from keep_sdk.sandbox import (
    Completed,
    Determinism,
    Isolation,
    MutationRequested,
    PhaseRequest,
    ProcessIsolation,
)
from keep_sdk.stores import Store

__all__ = [
    "Difference",
    "ReplayOutcome",
    "ReplaySummary",
    "RunReplay",
    "replay_runs",
]


class _Out(BaseModel):
    model_config = ConfigDict(
        alias_generator=to_camel, populate_by_name=True, frozen=True, extra="forbid"
    )


class ReplayOutcome(StrEnum):
    """What replaying one recorded run with the new version found."""

    SAME = "same"
    CHANGED = "changed"
    WOULD_FAIL = "would-fail"
    UNREPLAYABLE = "unreplayable"


class Difference(_Out):
    """One thing the new version does differently: recorded (before) and replayed (after)."""

    what: str = Field(description="mutation, publishes, reservations or state.")
    recorded: JsonValue = None
    replayed: JsonValue = None
    diff: str = Field(default="", description="A unified diff of the two, as JSON.")


class RunReplay(_Out):
    """The replay of one recorded run."""

    run_id: str
    handler: str
    kind: HandlerKind
    created_at: dt.datetime
    outcome: ReplayOutcome
    differences: list[Difference] = Field(default_factory=list)
    error: str | None = Field(default=None, description="Why it would fail or is unreplayable.")
    new_permissions: list[str] = Field(default_factory=list)


class ReplaySummary(_Out):
    """The replay of a workflow's recorded runs with a new version of its script."""

    workflow: str
    runs: list[RunReplay] = Field(default_factory=list)
    counts: dict[str, int] = Field(default_factory=dict)
    new_permissions: list[str] = Field(
        default_factory=list, description="Permissions the new version used that are not granted."
    )
    skipped: int = Field(default=0, description="Runs not replayed: they did not commit.")

    @computed_field  # type: ignore[prop-decorator]
    @property
    def ok(self) -> bool:
        """True when no run changed or would fail (unreplayable runs are reported only)."""
        return not any(
            r.outcome in (ReplayOutcome.CHANGED, ReplayOutcome.WOULD_FAIL) for r in self.runs
        )


def _diff(recorded: Any, replayed: Any) -> str:
    left = json.dumps(recorded, indent=2, sort_keys=True, ensure_ascii=False).splitlines()
    right = json.dumps(replayed, indent=2, sort_keys=True, ensure_ascii=False).splitlines()
    return "\n".join(difflib.unified_diff(left, right, "recorded", "replayed", lineterm="", n=2))


class _ReplayHost:
    """Answers a phase's reads from its recorded calls and keeps what it publishes."""

    def __init__(self, recorded: PhaseTrace | None) -> None:
        self.calls: list[TraceCall] = list(recorded.calls) if recorded else []
        self.used = [False] * len(self.calls)
        self.publishes: list[JsonValue] = []
        self.missing: str | None = None

    def call(self, name: str, arguments: JsonValue) -> JsonValue:
        if name == "publish":
            return self._publish(arguments)
        match = self._find(name, arguments)
        if match is None:
            shown = json.dumps(arguments, ensure_ascii=False, sort_keys=True)
            self.missing = f"ctx.{name}({shown}) is not in the recorded trace"
            raise InternalError(self.missing)
        return match.result

    def _find(self, name: str, arguments: JsonValue) -> TraceCall | None:
        candidates = [
            (index, call)
            for index, call in enumerate(self.calls)
            if call.operation == name and call.status == "ok" and call.arguments == arguments
        ]
        for index, call in candidates:
            if not self.used[index]:
                self.used[index] = True
                return call
        return candidates[0][1] if candidates else None

    def _publish(self, arguments: JsonValue) -> JsonValue:
        args = arguments if isinstance(arguments, dict) else {}
        try:
            request = PublishRequest.model_validate(args.get("event"))
        except ValidationError as exc:
            raise InternalError(f"invalid event for ctx.publish: {exc}") from None
        index = len(self.publishes)
        recorded = [c for c in self.calls if c.operation == "publish" and c.status == "ok"]
        message_id = request.message_id
        if (
            message_id is None
            and index < len(recorded)
            and isinstance(recorded[index].result, dict)
        ):
            found = recorded[index].result.get("messageId")  # type: ignore[union-attr]
            message_id = found if isinstance(found, str) else None
        self.publishes.append(
            {
                "topic": args.get("topic"),
                "messageId": message_id,
                "title": request.title,
                "payload": request.payload,
            }
        )
        return {"messageId": message_id or f"replay-{index}"}


def _recorded_publishes(trace: PhaseTrace | None) -> list[JsonValue]:
    out: list[JsonValue] = []
    for call in trace.calls if trace else []:
        if call.operation != "publish" or call.status != "ok":
            continue
        args = call.arguments if isinstance(call.arguments, dict) else {}
        event = args.get("event") if isinstance(args.get("event"), dict) else {}
        assert isinstance(event, dict)
        message_id = event.get("messageId")
        if message_id is None and isinstance(call.result, dict):
            message_id = call.result.get("messageId")
        out.append(
            {
                "topic": args.get("topic"),
                "messageId": message_id,
                "title": event.get("title"),
                "payload": event.get("payload"),
            }
        )
    return out


def _last(run: RunRecord, phase: HandlerPhase) -> PhaseTrace | None:
    found = [p for p in run.trace if p.phase is phase]
    return found[-1] if found else None


@dataclass(frozen=True, slots=True)
class _Stop:
    """The replay of a run ended early: it would fail or cannot be replayed."""

    outcome: ReplayOutcome
    error: str
    permissions: tuple[str, ...] = ()


class _Replayer:
    def __init__(
        self,
        source: str,
        manifest: WorkflowManifest,
        connectors: Manifest,
        grants: Sequence[str],
        policy: HostPolicy,
        isolation: Isolation,
    ) -> None:
        self.source = source
        self.manifest = manifest
        self.connectors = connectors
        self.grants = set(grants)
        self.policy = policy
        self.isolation = isolation

    def phase(
        self,
        run: RunRecord,
        phase: HandlerPhase,
        *,
        state: JsonValue = None,
        prepared: JsonValue = None,
        mutation_result: JsonValue = None,
        publishes: Sequence[str] = (),
        subscribed: Sequence[str] = (),
    ) -> tuple[Completed | MutationRequested, _ReplayHost] | _Stop:
        recorded = _last(run, phase)
        if recorded is not None and recorded.truncated:
            return _Stop(
                ReplayOutcome.UNREPLAYABLE,
                f"the {phase.value} trace left arguments or results out (the trace budget)",
            )
        host = _ReplayHost(recorded)
        seed = int.from_bytes(hashlib.sha256(run.id.encode()).digest()[:4], "big")
        request = PhaseRequest(
            source=self.source,
            handler=run.handler,
            phase=phase,
            state=state,
            has_state=state is not None,
            prepared=prepared,
            mutation_result=mutation_result,
            manifest=self.connectors,
            subscribed_topics=tuple(subscribed),
            publish_topics=tuple(publishes),
            policy=self.policy,
            determinism=Determinism(clock=run.created_at, seed=seed),
            filename="replay",
            call_sites=self.manifest.call_sites(run.handler, phase),
        )
        result = self.isolation.run(request, host)
        if host.missing is not None:
            return _Stop(ReplayOutcome.UNREPLAYABLE, f"{phase.value}: {host.missing}")
        error = result.outcome.to_error(request)
        if error is not None:
            return _Stop(ReplayOutcome.WOULD_FAIL, f"{phase.value}: {error}")
        outcome = result.outcome
        assert isinstance(outcome, Completed | MutationRequested)
        return outcome, host

    def permission_of(self, connector: str, operation: str) -> str | _Stop:
        try:
            return self.connectors.connector(connector).operation(operation).permission
        except KeepError as exc:
            return _Stop(ReplayOutcome.WOULD_FAIL, str(exc))


def _state(outcome: Completed | MutationRequested, before: JsonValue) -> JsonValue:
    if isinstance(outcome, Completed) and outcome.returned:
        return outcome.result
    return before


def _producer(r: _Replayer, run: RunRecord) -> list[Difference] | _Stop:
    producer = next((p for p in r.manifest.producers if p.name == run.handler), None)
    if producer is None:
        return _Stop(ReplayOutcome.WOULD_FAIL, f"the new version has no producer {run.handler!r}")
    topics = producer.publishes if producer.publishes is not None else r.manifest.topics
    ran = r.phase(run, HandlerPhase.PRODUCER, state=run.input_state, publishes=topics)
    if isinstance(ran, _Stop):
        return ran
    outcome, host = ran
    recorded = _recorded_publishes(_last(run, HandlerPhase.PRODUCER))
    diffs = []
    if host.publishes != recorded:
        diffs.append(_difference("publishes", recorded, host.publishes))
    new_state = _state(outcome, run.input_state)
    if new_state != run.output_state and run.output_state is not None:
        diffs.append(_difference("state", run.output_state, new_state))
    return diffs


def _difference(what: str, recorded: JsonValue, replayed: JsonValue) -> Difference:
    return Difference(
        what=what, recorded=recorded, replayed=replayed, diff=_diff(recorded, replayed)
    )


def _consumer(r: _Replayer, run: RunRecord) -> list[Difference] | _Stop:
    consumer: ConsumerManifest | None = next(
        (c for c in r.manifest.consumers if c.name == run.handler), None
    )
    if consumer is None:
        return _Stop(ReplayOutcome.WOULD_FAIL, f"the new version has no consumer {run.handler!r}")
    ran = r.phase(run, HandlerPhase.PREPARE, state=run.input_state, subscribed=consumer.subscribe)
    if isinstance(ran, _Stop):
        return ran
    prepared_out = ran[0]
    try:
        result = check_prepare_result(
            prepared_out.result if isinstance(prepared_out, Completed) else None,
            returned=isinstance(prepared_out, Completed) and prepared_out.returned,
            consumer=consumer,
            policy=r.policy,
            now=run.created_at,
        )
    except KeepError as exc:
        return _Stop(ReplayOutcome.WOULD_FAIL, f"prepare: {exc}")
    diffs: list[Difference] = []
    recorded_prepare = run.prepare_result
    old_reservations: JsonValue = [
        x.model_dump(mode="json", by_alias=True)
        for x in (recorded_prepare.reservations if recorded_prepare else [])
    ]
    new_reservations: JsonValue = [
        x.model_dump(mode="json", by_alias=True) for x in result.reservations
    ]
    if old_reservations != new_reservations:
        diffs.append(_difference("reservations", old_reservations, new_reservations))
    prepared = result.model_dump(mode="json", by_alias=True)
    recorded_mutation = _recorded_mutation(run)
    new_mutation: dict[str, JsonValue] | None = None
    if result.reservations:
        ran = r.phase(run, HandlerPhase.MUTATE, prepared=prepared)
        if isinstance(ran, _Stop):
            return ran
        mutate_out = ran[0]
        if isinstance(mutate_out, MutationRequested):
            call = f"{mutate_out.connector}.{mutate_out.operation}"
            new_mutation = {"call": call, "arguments": mutate_out.arguments}
            permission = r.permission_of(mutate_out.connector, mutate_out.operation)
            if isinstance(permission, _Stop):
                return permission
            if permission not in r.grants:
                return _Stop(
                    ReplayOutcome.WOULD_FAIL,
                    f"mutate: ctx.{call} needs the permission {permission!r}, which the "
                    "workflow has not been granted",
                    (permission,),
                )
    if new_mutation != recorded_mutation:
        diffs.append(_difference("mutation", recorded_mutation, new_mutation))
    same_call = new_mutation is None or (
        isinstance(recorded_mutation, dict) and recorded_mutation["call"] == new_mutation["call"]
    )
    if not same_call:
        return diffs
    applied = new_mutation is not None and run.mutation_result is not None
    mutation_result = (run.mutation_result if applied else None) or MutationNone()
    publishes = consumer.publishes if consumer.publishes is not None else r.manifest.topics
    ran = r.phase(
        run,
        HandlerPhase.NEXT,
        prepared=prepared,
        mutation_result=mutation_result.model_dump(mode="json", by_alias=True),
        publishes=publishes,
    )
    if isinstance(ran, _Stop):
        return ran
    next_out, host = ran
    recorded = _recorded_publishes(_last(run, HandlerPhase.NEXT))
    if host.publishes != recorded:
        diffs.append(_difference("publishes", recorded, host.publishes))
    new_state = _state(next_out, run.input_state)
    if run.output_state is not None and new_state != run.output_state:
        diffs.append(_difference("state", run.output_state, new_state))
    return diffs


def _recorded_mutation(run: RunRecord) -> dict[str, JsonValue] | None:
    trace = _last(run, HandlerPhase.MUTATE)
    for call in reversed(trace.calls if trace else []):
        if call.status == "requested":
            return {"call": call.operation, "arguments": call.arguments}
    return None


def _replay_one(r: _Replayer, run: RunRecord) -> RunReplay:
    base: dict[str, Any] = {
        "run_id": run.id,
        "handler": run.handler,
        "kind": run.kind,
        "created_at": run.created_at,
    }
    found = _producer(r, run) if run.kind is HandlerKind.PRODUCER else _consumer(r, run)
    if isinstance(found, _Stop):
        return RunReplay(
            **base,
            outcome=found.outcome,
            error=found.error,
            new_permissions=list(found.permissions),
        )
    outcome = ReplayOutcome.CHANGED if found else ReplayOutcome.SAME
    return RunReplay(**base, outcome=outcome, differences=found)


def replay_runs(
    source: str,
    store: Store,
    *,
    manifest: WorkflowManifest,
    connectors: Manifest,
    workflow: str | None = None,
    since: dt.datetime | None = None,
    limit: int | None = None,
    policy: HostPolicy | None = None,
    isolation: Isolation | None = None,
) -> ReplaySummary:
    """Replay the committed runs of `workflow` (the script's own name by default) recorded in
    `store` with `source` (its checked `manifest`); read only, nothing is written.
    Each phase performs only the ctx calls at the sites `manifest` approves for it (a
    manifest without them approves none).

    `since` keeps runs created at or after it; `limit` the most recent ones. Each phase
    runs in `isolation`; by default in a worker process of its own (the installation's
    default, `keep_sdk.app.DEFAULT_ISOLATION`), stopped when the replay ends. Raises
    `ConfigurationError` when the store holds no such workflow.
    """
    name = workflow or manifest.name
    if not name:
        raise ConfigurationError("the script has no name; pass the workflow to replay")
    try:
        record = store.get_workflow(name)
    except NotFound:
        known = ", ".join(w.name for w in store.list_workflows()) or "none"
        close = difflib.get_close_matches(name, [w.name for w in store.list_workflows()], n=1)
        hint = f"did you mean {close[0]!r}? " if close else ""
        raise ConfigurationError(
            f"the store holds no workflow {name!r}; {hint}workflows recorded there: {known}"
        ) from None
    runs = store.list_runs(workflow=name)
    if since is not None:
        runs = [r for r in runs if r.created_at >= since]
    committed = [r for r in runs if r.status is RunStatus.COMMITTED]
    skipped = len(runs) - len(committed)
    if limit is not None:
        committed = committed[-limit:]
    owned = ProcessIsolation() if isolation is None else None
    replayer = _Replayer(
        source,
        manifest,
        connectors,
        record.grants,
        policy or HostPolicy(),
        isolation if isolation is not None else owned or ProcessIsolation(),
    )
    try:
        results = [_replay_one(replayer, run) for run in committed]
    finally:
        if owned is not None:
            owned.close()
    permissions = sorted({p for r in results for p in r.new_permissions})
    return ReplaySummary(
        workflow=name,
        runs=results,
        counts=dict(Counter(r.outcome.value for r in results)),
        new_permissions=permissions,
        skipped=skipped,
    )
