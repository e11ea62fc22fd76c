"""The workflow manifest: the shape of a script that the validator extracts and the runtime runs.

Everything here is read from the script's syntax, never by running it, so the
validator and the runtime cannot disagree about which handlers exist, what they
subscribe to and when producers run.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, with_config
from pydantic.alias_generators import to_camel

from keep_sdk.contract.manifest import Manifest
from keep_sdk.model import HandlerPhase

__all__ = [
    "RESERVED_NAME_PREFIX",
    "CallSite",
    "ConsumerManifest",
    "CronSchedule",
    "DefaultExport",
    "HandlerLocation",
    "IntervalSchedule",
    "ProducerManifest",
    "Schedule",
    "Span",
    "WorkflowManifest",
]


RESERVED_NAME_PREFIX = "keep-worker:"
"""Workflow names may not start with this: lease rows under it mark a running worker's
presence (the scheduler counts live workers by them), so no workflow can hold one."""


Positive = Annotated[int, Field(ge=1)]
Offset = Annotated[int, Field(ge=0)]


_CAMEL = ConfigDict(alias_generator=to_camel, populate_by_name=True)
"""JSON spells fields in camelCase (``startLine``); Python and stored manifests by name."""


@with_config(_CAMEL)
@dataclass(frozen=True, slots=True)
class Span:
    """A range of a script: 1-based lines and columns (end exclusive) and character offsets.

    Columns count Unicode code points. ``start_offset``/``end_offset`` index the
    script as a Python ``str``, so ``source[span.start_offset:span.end_offset]``
    is the text of the range. (A dataclass rather than a model: it is built for
    every handler of every script; pydantic still validates it inside models.)
    """

    start_line: Positive
    start_column: Positive
    end_line: Positive
    end_column: Positive
    start_offset: Offset
    end_offset: Offset


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid", **_CAMEL)


class IntervalSchedule(_Frozen):
    """Run every `seconds`; `every` is the script's spelling (``"5m"``), None for the default."""

    kind: Literal["interval"] = "interval"
    seconds: float = Field(gt=0)
    every: str | None = Field(
        default=None, description="As written in the script; None when the policy default applies."
    )


class CronSchedule(_Frozen):
    """Run at the times of a five-field cron expression (validated with croniter)."""

    kind: Literal["cron"] = "cron"
    cron: str


Schedule = Annotated[IntervalSchedule | CronSchedule, Field(discriminator="kind")]


class CallSite(_Frozen):
    """A ``ctx`` call the validator read and attributed to a handler phase as an ordinary call.

    `line`/`column` to `end_line`/`end_column` (end exclusive) is the call expression in
    the script as written (1-based; columns count UTF-8 bytes, as QuickJS does); `holes`
    are the functions written inside it (a callback in its arguments), whose code is not
    the call's own. `connector` is None for the ctx methods (``publish``, ``peek``,
    ``getByIds``), whose name is then `operation`.
    """

    connector: str | None = None
    operation: str
    line: Positive
    column: Positive
    end_line: Positive
    end_column: Positive
    mutation: bool = False
    holes: tuple[tuple[int, int, int, int], ...] = ()

    @property
    def name(self) -> str:
        """The call's name as the host sees it: ``gmail.search`` or ``publish``."""
        return self.operation if self.connector is None else f"{self.connector}.{self.operation}"

    def covers(self, line: int, column: int) -> bool:
        """Whether code of the call itself (not of a function inside it) is at `line`:`column`."""
        at = (line, column)
        if not (self.line, self.column) <= at < (self.end_line, self.end_column):
            return False
        return not any((h[0], h[1]) <= at < (h[2], h[3]) for h in self.holes)


class HandlerLocation(_Frozen):
    """Where a handler function is: the function expression or declaration in the script.

    `call_sites` are the ctx calls the phase may make (see `CallSite`); the host refuses
    any other. None when they were not recorded (a version deployed before they were).
    """

    phase: HandlerPhase
    span: Span
    function_name: str | None = Field(
        default=None, description="Name of a module-level function the handler refers to."
    )
    call_sites: tuple[CallSite, ...] | None = Field(
        default=None, description="The approved ctx call sites of this phase."
    )


class ProducerManifest(_Frozen):
    """A producer: when it runs and where its handler is."""

    name: str
    schedule: Schedule
    handler: HandlerLocation
    publishes: list[str] | None = Field(
        default=None, description="Declared output topics; None when not declared."
    )


class ConsumerManifest(_Frozen):
    """A consumer: what it subscribes to, what it may publish, its three phases."""

    name: str
    subscribe: list[str]
    publishes: list[str] | None = Field(
        default=None, description="Declared output topics; None when not declared."
    )
    prepare: HandlerLocation
    mutate: HandlerLocation
    next: HandlerLocation


class DefaultExport(_Frozen):
    """The script's single ``export default`` statement.

    `statement` covers the whole statement; `value` the exported expression.
    A runtime compiles the script as a function body by replacing the text from
    ``statement.start_offset`` to ``value.start_offset`` with ``return (`` and
    closing the parenthesis at ``value.end_offset``.
    """

    statement: Span
    value: Span


class WorkflowManifest(_Frozen):
    """The shape of a workflow script, in declaration order."""

    name: str | None = Field(default=None, description="The `name` field, if the script gives one.")
    topics: list[str]
    producers: list[ProducerManifest]
    consumers: list[ConsumerManifest]
    default_export: DefaultExport
    connectors: Manifest | None = Field(
        default=None,
        description="The connector operations as they were when this version was deployed "
        "(frozen); None from the validator and for versions deployed before it was recorded.",
    )

    def call_sites(self, handler: str, phase: HandlerPhase) -> tuple[CallSite, ...] | None:
        """The approved ctx call sites of `handler`'s `phase`; None when not recorded."""
        for producer in self.producers:
            if producer.name == handler and phase is HandlerPhase.PRODUCER:
                return producer.handler.call_sites
        for consumer in self.consumers:
            if consumer.name == handler and phase is not HandlerPhase.PRODUCER:
                location: HandlerLocation = getattr(consumer, phase.value)
                return location.call_sites
        return None
