"""The worker process: ``python -m keep_sdk.sandbox.worker [ADDRESS_SPACE_BYTES]``.

Reads one JSON message per frame (`keep_sdk.sandbox.frames`: a 4-byte length, then
the bytes) on stdin and writes one per frame on the original stdout (the script's
own output cannot reach it: there is none, and Python's ``sys.stdout`` is
redirected to stderr). Protocol, parent → worker:
``{"type": "context", "key", "context"}`` (the source, manifest, policy and file
name of later requests: `keep_sdk.sandbox.contexts`),
``{"type": "run", "context": key, "request": the rest of a PhaseRequest}`` and, for
each relayed host call,
``{"type": "result", "ok": true, "value": ...}`` or ``{"ok": false, "outcome": ...}``.
Worker → parent: ``{"type": "ready"}`` once, ``{"type": "call", "name", "arguments"}``
for each host call, and ``{"type": "done", "result": PhaseResult}`` per run, written as
`DONE_HEAD`, the result's JSON and ``}`` so the parent can validate it in one pass.
"""

from __future__ import annotations

import json
import os
import resource
import sys
from typing import IO, Any

from pydantic import JsonValue, TypeAdapter

from keep_sdk.contract.manifest import Manifest
from keep_sdk.model import HostPolicy
from keep_sdk.sandbox._failures import RelayedOutcome
from keep_sdk.sandbox.contexts import ContextLog
from keep_sdk.sandbox.engine import run_phase
from keep_sdk.sandbox.frames import model_message, read_frame, write_frame
from keep_sdk.sandbox.outcome import Outcome, PhaseRequest, PhaseResult

__all__ = ["RelayHost", "done_frame", "serve"]

_OUTCOME: TypeAdapter[Outcome] = TypeAdapter(Outcome)


class RelayHost:
    """A host interface that forwards every call to the parent process and waits."""

    def __init__(self, reader: IO[bytes], writer: IO[bytes]) -> None:
        self._reader = reader
        self._writer = writer

    def call(self, name: str, arguments: JsonValue) -> JsonValue:
        """Send the call to the parent; return its value or raise `RelayedOutcome`."""
        _send(self._writer, {"type": "call", "name": name, "arguments": arguments})
        frame = read_frame(self._reader)
        if frame is None:
            raise SystemExit(0)
        reply: dict[str, Any] = json.loads(frame)
        if reply.get("ok"):
            value: JsonValue = reply.get("value")
            return value
        raise RelayedOutcome(_OUTCOME.validate_python(reply["outcome"]))


def _send(writer: IO[bytes], message: dict[str, Any]) -> None:
    try:
        data = json.dumps(message, ensure_ascii=False).encode("utf-8")
    except UnicodeEncodeError:
        data = json.dumps(message).encode("ascii")
    write_frame(writer, data)


def serve(reader: IO[bytes], writer: IO[bytes]) -> None:
    """Answer run requests until stdin closes."""
    host = RelayHost(reader, writer)
    contexts: ContextLog[dict[str, Any]] = ContextLog()
    _send(writer, {"type": "ready"})
    while (frame := read_frame(reader)) is not None:
        message = json.loads(frame)
        if message.get("type") == "context":
            contexts.put(message["key"], _validated(message["context"]))
            continue
        if message.get("type") != "run":
            continue
        request = PhaseRequest.model_validate(
            {**message["request"], **contexts.use(message["context"])}
        )
        result = run_phase(request, host).model_copy(update={"isolation": "process"})
        write_frame(writer, done_frame(result))


def done_frame(result: PhaseResult) -> bytes:
    """The frame that ends a phase: `DONE_HEAD`, `result` as JSON, and ``}``, so the parent
    validates the result from those bytes in one pass (a result holding a lone surrogate
    goes as an ordinary ASCII JSON message: `model_message`)."""
    return model_message({"type": "done"}, "result", result)


def _validated(context: dict[str, Any]) -> dict[str, Any]:
    """The context with its models built once, reused as they are by every request."""
    return {
        **context,
        "manifest": Manifest.model_validate(context["manifest"]),
        "policy": HostPolicy.model_validate(context["policy"]),
    }


def main(argv: list[str]) -> None:
    """Limit the address space, take over stdin/stdout, serve."""
    if len(argv) > 1:
        cap = int(argv[1])
        resource.setrlimit(resource.RLIMIT_AS, (cap, cap))
    protocol_out = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    serve(sys.stdin.buffer, protocol_out)


if __name__ == "__main__":
    main(sys.argv)
