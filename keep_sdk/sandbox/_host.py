"""The interface the runtime implements so that a sandboxed script can reach the world."""

from __future__ import annotations

from typing import Protocol, runtime_checkable

from pydantic import JsonValue

__all__ = ["HostInterface"]


@runtime_checkable
class HostInterface(Protocol):
    """Performs the ctx calls a script makes; the sandbox imports no store or connector.

    `name` and `arguments` have already been checked against the phase table, the
    topic scope and the size limits when `call` runs:

    - a connector read, ``"gmail.search"``: `arguments` is the script's one object
      argument (``{}`` when it passed none);
    - ``"peek"``: ``{"topic": str, "limit": int}`` (the limit defaulted and clamped by
      the host policy);
    - ``"getByIds"``: ``{"topic": str, "ids": [str, ...]}``;
    - ``"publish"``: ``{"topic": str, "event": {"messageId"?, "title", "payload"}}``
      (validated as `keep_sdk.model.PublishRequest`).

    Mutations never reach `call`: the sandbox returns them as
    `keep_sdk.sandbox.MutationRequested` and the runtime performs them.

    Return a JSON value; it is handed to the script. Raise a keep_sdk error to end the
    phase: a `LogicError` (`PhaseViolation`, `InvalidArguments`…) ends it as a logic
    error, a `ConnectorError` (`TransientError`, `PermissionDenied`,
    `PreconditionFailed`, `UncertainOutcome`) as `keep_sdk.sandbox.CallFailed`, and
    anything else as an internal error. The script never observes the exception.
    """

    def call(self, name: str, arguments: JsonValue) -> JsonValue:
        """Perform one ctx call and return its JSON result."""
        ...
