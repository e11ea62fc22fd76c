"""``keep diff``: what a workflow version declares and may reach, and how two versions differ.

A version's surface is read statically (the validator's facts, nothing runs): its
topics; each handler's schedule, subscriptions and declared publishes; the
operations each phase may reach (``gmail.search``, ``publish``…); and the
permissions those operations need. `diff_surfaces` compares two surfaces; the
permissions the new version needs that the old one did not are the ones a person
must grant (a deployed version never inherits more than was granted: a run that
calls an operation whose permission is missing pauses for approval).
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field, JsonValue
from pydantic.alias_generators import to_camel

from keep_sdk.contract.manifest import Manifest
from keep_sdk.contract.workflow import CronSchedule, Schedule
from keep_sdk.errors import KeepError, ScriptRejected
from keep_sdk.model import HostPolicy
from keep_sdk.validator import analyze

__all__ = [
    "FieldChange",
    "HandlerChange",
    "HandlerSurface",
    "SurfaceDiff",
    "WorkflowSurface",
    "diff_surfaces",
    "surface_of",
]


class _Out(BaseModel):
    model_config = ConfigDict(
        alias_generator=to_camel, populate_by_name=True, frozen=True, extra="forbid"
    )


class HandlerSurface(_Out):
    """One producer or consumer: when it runs, what it reads and writes, per phase."""

    name: str
    kind: str = Field(description="producer or consumer.")
    schedule: str | None = Field(default=None, description="Producers: `5m`, `every 300s`, cron.")
    subscribe: list[str] = Field(default_factory=list)
    publishes: list[str] | None = Field(default=None, description="Declared; None: any topic.")
    operations: dict[str, list[str]] = Field(
        default_factory=dict, description="Phase → operations it may reach, sorted."
    )


class WorkflowSurface(_Out):
    """What one version of a workflow declares and may reach."""

    name: str | None
    topics: list[str]
    handlers: list[HandlerSurface]
    permissions: list[str] = Field(description="Permissions its operations need, sorted.")


class FieldChange(_Out):
    """One field of a handler's surface, before and after."""

    old: JsonValue = None
    new: JsonValue = None


class HandlerChange(_Out):
    """A handler present in both versions whose surface changed, field by field."""

    name: str
    changes: dict[str, FieldChange]


class SurfaceDiff(_Out):
    """How the new version differs from the old one."""

    topics_added: list[str] = Field(default_factory=list)
    topics_removed: list[str] = Field(default_factory=list)
    handlers_added: list[str] = Field(default_factory=list)
    handlers_removed: list[str] = Field(default_factory=list)
    handlers_changed: list[HandlerChange] = Field(default_factory=list)
    new_permissions: list[str] = Field(
        default_factory=list, description="Needed by the new version, not by the old one."
    )
    dropped_permissions: list[str] = Field(default_factory=list)

    @property
    def empty(self) -> bool:
        """True when the two versions have the same surface."""
        return not any(
            (
                self.topics_added,
                self.topics_removed,
                self.handlers_added,
                self.handlers_removed,
                self.handlers_changed,
                self.new_permissions,
                self.dropped_permissions,
            )
        )


def _schedule(schedule: Schedule) -> str:
    if isinstance(schedule, CronSchedule):
        return f"cron {schedule.cron}"
    return schedule.every or f"every {schedule.seconds:g}s"


def surface_of(
    source: str,
    *,
    connectors: Manifest,
    policy: HostPolicy | None = None,
    filename: str | None = None,
) -> WorkflowSurface:
    """The surface of `source`; `ScriptRejected` when its shape cannot be read."""
    analysis = analyze(source, connectors=connectors, policy=policy, filename=filename)
    manifest = analysis.manifest
    if manifest is None:
        raise ScriptRejected(
            f"{filename or 'the script'}: the workflow's shape cannot be read; "
            "run `keep validate` on it"
        )
    reached: dict[str, dict[str, set[str]]] = {}
    permissions: set[str] = set()
    for call in analysis.calls:
        if call.connector and call.operation:
            name = f"{call.connector}.{call.operation}"
            try:
                op = connectors.connector(call.connector).operation(call.operation)
            except KeepError:
                continue
            permissions.add(op.permission)
        elif call.method:
            name = call.method
        else:
            continue
        phases = reached.setdefault(call.handler.name, {})
        phases.setdefault(call.handler.phase.value, set()).add(name)
    handlers = [
        HandlerSurface(
            name=p.name,
            kind="producer",
            schedule=_schedule(p.schedule),
            publishes=p.publishes,
            operations={k: sorted(v) for k, v in sorted(reached.get(p.name, {}).items())},
        )
        for p in manifest.producers
    ] + [
        HandlerSurface(
            name=c.name,
            kind="consumer",
            subscribe=list(c.subscribe),
            publishes=c.publishes,
            operations={k: sorted(v) for k, v in sorted(reached.get(c.name, {}).items())},
        )
        for c in manifest.consumers
    ]
    return WorkflowSurface(
        name=manifest.name,
        topics=sorted(manifest.topics),
        handlers=handlers,
        permissions=sorted(permissions),
    )


def diff_surfaces(old: WorkflowSurface, new: WorkflowSurface) -> SurfaceDiff:
    """What changed from `old` to `new`."""
    before = {h.name: h for h in old.handlers}
    after = {h.name: h for h in new.handlers}
    changed = []
    for name in sorted(before.keys() & after.keys()):
        a, b = before[name].model_dump(), after[name].model_dump()
        fields = {k: FieldChange(old=a[k], new=b[k]) for k in a if k != "name" and a[k] != b[k]}
        if fields:
            changed.append(HandlerChange(name=name, changes=fields))
    return SurfaceDiff(
        topics_added=sorted(set(new.topics) - set(old.topics)),
        topics_removed=sorted(set(old.topics) - set(new.topics)),
        handlers_added=sorted(after.keys() - before.keys()),
        handlers_removed=sorted(before.keys() - after.keys()),
        handlers_changed=changed,
        new_permissions=sorted(set(new.permissions) - set(old.permissions)),
        dropped_permissions=sorted(set(old.permissions) - set(new.permissions)),
    )
