"""The worker process: ``python -m keep_sdk.sandbox.worker [ADDRESS_SPACE_BYTES]``.

Reads one JSON message per line on stdin and writes one per line on the original
stdout (the script's own output cannot reach it: there is none, and Python's
``sys.stdout`` is redirected to stderr). Protocol, parent → worker:
``{"type": "run", "request": PhaseRequest}`` and, for each relayed host call,
``{"type": "result", "ok": true, "value": ...}`` or ``{"ok": false, "outcome": ...}``.
Worker → parent: ``{"type": "ready"}`` once, ``{"type": "call", "name", "arguments"}``
for each host call, and ``{"type": "done", "result": PhaseResult}`` per run.
"""

from __future__ import annotations

import json
import os
import resource
import sys
from typing import IO, Any

from pydantic import JsonValue, TypeAdapter

from keep_sdk.sandbox.engine import run_phase
from keep_sdk.sandbox.failures import RelayedOutcome
from keep_sdk.sandbox.outcome import Outcome, PhaseRequest

__all__ = ["RelayHost", "serve"]

_OUTCOME: TypeAdapter[Outcome] = TypeAdapter(Outcome)


class RelayHost:
    """A host interface that forwards every call to the parent process and waits."""

    def __init__(self, reader: IO[str], writer: IO[str]) -> None:
        self._reader = reader
        self._writer = writer

    def call(self, name: str, arguments: JsonValue) -> JsonValue:
        """Send the call to the parent; return its value or raise `RelayedOutcome`."""
        _send(self._writer, {"type": "call", "name": name, "arguments": arguments})
        line = self._reader.readline()
        if not line:
            raise SystemExit(0)
        reply: dict[str, Any] = json.loads(line)
        if reply.get("ok"):
            value: JsonValue = reply.get("value")
            return value
        raise RelayedOutcome(_OUTCOME.validate_python(reply["outcome"]))


def _send(writer: IO[str], message: dict[str, Any]) -> None:
    writer.write(json.dumps(message) + "\n")
    writer.flush()


def serve(reader: IO[str], writer: IO[str]) -> None:
    """Answer run requests until stdin closes."""
    host = RelayHost(reader, writer)
    _send(writer, {"type": "ready"})
    for line in reader:
        message = json.loads(line)
        if message.get("type") != "run":
            continue
        request = PhaseRequest.model_validate(message["request"])
        result = run_phase(request, host).model_copy(update={"isolation": "process"})
        _send(writer, {"type": "done", "result": result.model_dump(mode="json")})


def main(argv: list[str]) -> None:
    """Limit the address space, take over stdin/stdout, serve."""
    if len(argv) > 1:
        cap = int(argv[1])
        resource.setrlimit(resource.RLIMIT_AS, (cap, cap))
    protocol_out = os.fdopen(os.dup(1), "w", encoding="utf-8")
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    serve(sys.stdin, protocol_out)


if __name__ == "__main__":
    main(sys.argv)
