"""OpenTelemetry traces of runs: one trace per run, a span per phase, a span per call."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from keep_sdk.contract.observations import LedgerChanged, Observation, RunChanged
from keep_sdk.model import PhaseTrace, RunRecord, RunStatus
from keep_sdk.plugins import hookimpl
from keep_sdk.telemetry._metrics import ENDED

if TYPE_CHECKING:
    from opentelemetry.trace import Span, Tracer, TracerProvider

__all__ = ["RunTracer"]

_NS = 1_000_000_000


@dataclass
class _Open:
    span: Span
    phases: int
    key: str | None = None
    ledger: dict[str, str] = field(default_factory=dict)


class RunTracer:
    """Turns what the runtime observes into OpenTelemetry spans (register it as a plugin).

    A run is one trace: a root span ``keep.run`` from the run's first observed change to
    its end (committed, failed or crashed; a process that stops ends its open run spans
    in `close`). Each phase the run went through is a child span ``keep.phase <phase>``
    lasting the phase's wall-clock time, and each call the phase made a child of it,
    ``keep.call <operation>``, lasting the call's time. Attributes name the run,
    workflow, handler, phase, operation, outcome and the mutation's idempotency key;
    arguments and results are never recorded, and every text attribute goes through
    `redact` (the configuration's redactor) so no configured secret leaves the process.
    """

    def __init__(
        self,
        provider: TracerProvider | None = None,
        *,
        redact: Callable[[str], str] = lambda text: text,
    ) -> None:
        from opentelemetry import trace

        self._tracer: Tracer = trace.get_tracer("keep_sdk", tracer_provider=provider)
        self._redact = redact
        self._lock = threading.Lock()
        self._open: dict[str, _Open] = {}

    @hookimpl
    def observe(self, observation: Observation) -> None:
        """Start, extend or end the trace of the run that changed (the ``observe`` hook)."""
        with self._lock:
            if isinstance(observation, RunChanged):
                self._run(observation.run, observation.previous)
            elif isinstance(observation, LedgerChanged):
                entry = observation.entry
                opened = self._open.get(entry.run_id)
                if opened is not None and opened.key != entry.idempotency_key:
                    opened.key = entry.idempotency_key
                    opened.span.set_attribute("keep.idempotency_key", self._text(opened.key))

    def close(self) -> None:
        """End every open run span (the process stops; the runs go on elsewhere)."""
        with self._lock:
            for opened in self._open.values():
                opened.span.set_attribute("keep.run.open", True)
                opened.span.end()
            self._open.clear()

    def _text(self, value: str) -> str:
        return self._redact(value)

    def _attributes(self, run: RunRecord) -> dict[str, Any]:
        return {
            "keep.run.id": run.id,
            "keep.workflow": self._text(run.workflow),
            "keep.handler": self._text(run.handler),
            "keep.run.kind": run.kind.value,
        }

    def _run(self, run: RunRecord, previous: RunRecord | None) -> None:
        from opentelemetry.trace import Status, StatusCode

        opened = self._open.get(run.id)
        if opened is None:
            span = self._tracer.start_span(
                "keep.run",
                attributes=self._attributes(run),
                start_time=int(run.created_at.timestamp() * _NS)
                if previous is None
                else time.time_ns(),
            )
            seen = len(previous.trace) if previous is not None else 0
            opened = self._open[run.id] = _Open(span=span, phases=seen)
        for phase in run.trace[opened.phases :]:
            self._phase(opened, run, phase)
        opened.phases = len(run.trace)
        opened.span.set_attribute("keep.run.status", run.status.value)
        opened.span.set_attribute("keep.run.phase", run.phase.value)
        if run.status in ENDED:
            if run.status is not RunStatus.COMMITTED:
                detail = self._text(run.error or run.status.value)
                opened.span.set_status(Status(StatusCode.ERROR, detail))
            opened.span.end(end_time=max(time.time_ns(), int(run.updated_at.timestamp() * _NS)))
            del self._open[run.id]

    def _phase(self, opened: _Open, run: RunRecord, phase: PhaseTrace) -> None:
        from opentelemetry import trace
        from opentelemetry.trace import Status, StatusCode

        end = time.time_ns()
        start = end - int(phase.wall_time_s * _NS)
        parent = trace.set_span_in_context(opened.span)
        attributes = {**self._attributes(run), "keep.phase": phase.phase.value}
        if opened.key is not None:
            attributes["keep.idempotency_key"] = self._text(opened.key)
        span = self._tracer.start_span(
            f"keep.phase {phase.phase.value}",
            context=parent,
            attributes=attributes,
            start_time=start,
        )
        inside = trace.set_span_in_context(span)
        at = start
        for call in phase.calls:
            took = int(call.duration_s * _NS)
            call_attributes: dict[str, Any] = {
                "keep.operation": self._text(call.operation),
                "keep.call.status": call.status,
            }
            if call.line is not None:
                call_attributes["keep.script.line"] = call.line
            if call.failure is not None:
                call_attributes["keep.failure"] = call.failure.value
            if call.status == "requested" and opened.key is not None:
                call_attributes["keep.idempotency_key"] = self._text(opened.key)
            child = self._tracer.start_span(
                f"keep.call {self._text(call.operation)}",
                context=inside,
                attributes=call_attributes,
                start_time=at,
            )
            if call.error is not None:
                child.set_status(Status(StatusCode.ERROR, self._text(call.error)))
            at = min(end, at + took)
            child.end(end_time=at)
        span.end(end_time=end)
