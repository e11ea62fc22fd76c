"""Shared helpers: a hand-built connector manifest, a recording host and small limits."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from pydantic import JsonValue

from keep_sdk.contract.manifest import ConnectorManifest, Manifest, OperationManifest
from keep_sdk.model import HandlerPhase, HostPolicy, OperationKind, SandboxLimits
from keep_sdk.sandbox import (
    Completed,
    LimitFailure,
    LogicFailure,
    MutationRequested,
    PhaseRequest,
    PhaseResult,
    run_phase,
)

_OBJECT: dict[str, Any] = {"type": "object"}


def _op(name: str, kind: OperationKind, permission: str, **schema: Any) -> OperationManifest:
    arguments = {"type": "object", **schema} if schema else _OBJECT
    return OperationManifest(name=name, kind=kind, permission=permission, arguments=arguments)


MANIFEST = Manifest(
    connectors=[
        ConnectorManifest(
            name="gmail",
            operations=[
                _op("getById", OperationKind.READ_BY_ID, "gmail.read"),
                _op("search", OperationKind.READ, "gmail.read"),
                _op(
                    "send",
                    OperationKind.MUTATION,
                    "gmail.send",
                    properties={"to": {"type": "string"}, "subject": {"type": "string"}},
                    required=["to"],
                ),
            ],
        ),
        ConnectorManifest(
            name="sheets",
            operations=[
                _op(
                    "appendRow",
                    OperationKind.MUTATION,
                    "sheets.write",
                    properties={"values": {"type": "array"}},
                    required=["values"],
                ),
                _op("getRow", OperationKind.READ_BY_ID, "sheets.read"),
                _op("listRows", OperationKind.READ, "sheets.read"),
                _op("updateRow", OperationKind.MUTATION, "sheets.write"),
            ],
        ),
        ConnectorManifest(
            name="slack",
            operations=[_op("postMessage", OperationKind.MUTATION, "slack.write")],
        ),
    ]
)

FAST_LIMITS = SandboxLimits(
    cpu_time_s=0.3,
    wall_time_s=1.0,
    memory_bytes=16 * 1024 * 1024,
    stack_bytes=256 * 1024,
    max_jobs=20_000,
    max_host_calls=50,
    max_value_bytes=64 * 1024,
    max_value_depth=32,
    max_state_bytes=16 * 1024,
    max_log_bytes=4 * 1024,
)
FAST_POLICY = HostPolicy(sandbox=FAST_LIMITS)


class RecordingHost:
    """Answers every ctx call with `answer(name, arguments)` and records it."""

    def __init__(self, answer: Callable[[str, JsonValue], JsonValue] | None = None) -> None:
        self.calls: list[tuple[str, JsonValue]] = []
        self._answer = answer

    def call(self, name: str, arguments: JsonValue) -> JsonValue:
        self.calls.append((name, arguments))
        if self._answer is not None:
            return self._answer(name, arguments)
        return {"called": name, "with": arguments}


def producer(body: str, *, name: str = "h") -> str:
    """A workflow with one producer whose async handler body is `body`."""
    return (
        "export default Keep.workflow({\n"
        f"  producers: {{ {name}: {{ handler: async (ctx, state) => {{\n{body}\n}} }} }},\n"
        "});\n"
    )


def consumer(*, prepare: str = "return {};", mutate: str = "", next_: str = "return null;") -> str:
    """A workflow with one consumer `c` whose phase bodies are given."""
    return (
        "export default Keep.workflow({\n"
        "  consumers: { c: Keep.consumer({\n"
        f"    async prepare(ctx, state) {{\n{prepare}\n}},\n"
        f"    async mutate(ctx, prepared) {{\n{mutate}\n}},\n"
        f"    async next(ctx, prepared, mutationResult) {{\n{next_}\n}},\n"
        "  }) },\n"
        "});\n"
    )


def request(
    source: str,
    phase: HandlerPhase | str = HandlerPhase.PRODUCER,
    *,
    handler: str | None = None,
    policy: HostPolicy = FAST_POLICY,
    **fields: Any,
) -> PhaseRequest:
    """A request against `MANIFEST` with small limits; `handler` defaults to h or c.

    Without `call_sites` the request skips the site check (`unchecked_sites`): these
    tests exercise the sandbox alone, not the validator's sites."""
    phase = HandlerPhase(phase)
    fields.setdefault("unchecked_sites", "call_sites" not in fields)
    default_handler = "h" if phase is HandlerPhase.PRODUCER else "c"
    fields.setdefault("subscribed_topics", ("email.received",))
    fields.setdefault("publish_topics", ("row.created",))
    return PhaseRequest(
        source=source,
        handler=handler or default_handler,
        phase=phase,
        manifest=MANIFEST,
        policy=policy,
        **fields,
    )


def run(
    source: str,
    phase: HandlerPhase | str = HandlerPhase.PRODUCER,
    *,
    host: Any = None,
    **fields: Any,
) -> PhaseResult:
    """Run `source` in process with the fast policy."""
    return run_phase(request(source, phase, **fields), host or RecordingHost())


def in_phase(phase: HandlerPhase | str, body: str) -> str:
    """A workflow where the handler of `phase` (producer h, or consumer c) runs `body`."""
    phase = HandlerPhase(phase)
    if phase is HandlerPhase.PRODUCER:
        return producer(body)
    bodies = {"prepare": "return {};", "mutate": "", "next_": "return null;"}
    bodies["next_" if phase is HandlerPhase.NEXT else phase.value] = body
    return consumer(**bodies)


def script_headers(path: Path) -> dict[str, str]:
    """The `// key: value` header lines at the top of an adversarial script."""
    headers = {}
    for line in path.read_text("utf-8").splitlines():
        if not line.startswith("// ") or ":" not in line:
            break
        key, _, value = line[3:].partition(":")
        headers[key.strip()] = value.strip()
    return headers


def check_outcome(result: PhaseResult, expect: str) -> None:
    """Assert that `result` matches an adversarial header `expect` value."""
    kind, _, detail = expect.partition(":")
    outcome = result.outcome
    assert outcome.kind == kind, outcome
    if isinstance(outcome, LimitFailure):
        assert outcome.limit.value in detail.split("|"), outcome
    elif isinstance(outcome, LogicFailure):
        assert detail in outcome.message, outcome
    elif isinstance(outcome, Completed) and detail:
        assert outcome.result == json.loads(detail), outcome
    elif isinstance(outcome, MutationRequested):
        assert outcome.arguments == json.loads(detail), outcome
