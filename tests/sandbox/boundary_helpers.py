"""A host that keeps published events and returns them on peek, as the runtime's host does."""

from __future__ import annotations

import hashlib
from typing import Any

from pydantic import JsonValue

from keep_sdk.sandbox import PhaseResult, ProcessIsolation, run_phase
from keep_sdk.sandbox.outcome import PhaseRequest

CREATED_AT = "2026-11-23T09:00:00.123456Z"


class TopicHost:
    """Answers ``publish``, ``peek`` and ``gmail.search`` (with `read_result`), keeping events."""

    def __init__(self, read_result: JsonValue = None) -> None:
        self.events: list[dict[str, Any]] = []
        self.read_result = read_result
        self.calls: list[str] = []

    def call(self, name: str, arguments: JsonValue) -> JsonValue:
        self.calls.append(name)
        assert isinstance(arguments, dict)
        if name == "publish":
            event: dict[str, Any] = dict(arguments["event"])  # type: ignore[arg-type]
            digest = hashlib.sha256(str(len(self.events)).encode()).hexdigest()[:24]
            message_id = event.get("messageId") or f"host-{digest}"
            self.events.append(
                {
                    "topic": arguments["topic"],
                    "messageId": message_id,
                    "title": event["title"],
                    "payload": event.get("payload"),
                    "createdAt": CREATED_AT,
                }
            )
            return {"messageId": message_id}
        if name == "peek":
            limit = arguments["limit"]
            assert isinstance(limit, int)
            return [e for e in self.events if e["topic"] == arguments["topic"]][:limit]
        return self.read_result


class Isolated:
    """Runs a request in the chosen isolation."""

    def __init__(self, pool: ProcessIsolation | None) -> None:
        self.pool = pool

    def __call__(self, request: PhaseRequest, host: Any) -> PhaseResult:
        if self.pool is None:
            return run_phase(request, host)
        return self.pool.run(request, host)
