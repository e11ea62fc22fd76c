"""`gmail`: a mailbox double (search, getById, send)."""

from __future__ import annotations

from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field, JsonValue
from pydantic.alias_generators import to_camel

from keep_sdk.connectors.builtin._double import Doc, ServiceDouble
from keep_sdk.connectors.operation import operation
from keep_sdk.model import OperationKind, ReconcileOutcome

__all__ = ["MESSAGE_SCHEMA", "Gmail", "GmailSearch", "GmailSend", "MessageRef"]


class _Args(BaseModel):
    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, extra="forbid")


class GmailSearch(_Args):
    """Arguments of ``ctx.gmail.search``."""

    query: str | None = Field(
        default=None,
        description="Case-insensitive text matched against from, to, subject and body; "
        "'from:alice' restricts to a sender.",
    )
    after: str | None = Field(
        default=None,
        description="Only messages received strictly after this ISO 8601 time (a cursor).",
    )
    limit: Annotated[int, Field(ge=1, le=500)] = 50


class MessageRef(_Args):
    """Arguments of ``ctx.gmail.getById``."""

    id: Annotated[str, Field(min_length=1)]


class GmailSend(_Args):
    """Arguments of ``ctx.gmail.send``."""

    to: Annotated[str, Field(min_length=3, pattern=r".+@.+")]
    subject: Annotated[str, Field(max_length=998)]
    body: str
    cc: list[str] = Field(default_factory=list)
    in_reply_to: str | None = Field(default=None, description="Id of the message answered.")


_TEXT = {"type": "string"}

MESSAGE_SCHEMA = {
    "type": "object",
    "description": "A received message; seed data may give it more fields.",
    "properties": {
        "id": {**_TEXT, "description": "Its id (`ctx.gmail.getById`)."},
        "from": _TEXT,
        "to": _TEXT,
        "subject": _TEXT,
        "body": _TEXT,
        "receivedAt": {**_TEXT, "description": "ISO 8601 time it was received."},
    },
    "required": ["id", "from", "subject", "body", "receivedAt"],
}
"""A message as ``search`` and ``getById`` return it (open: seeds may add fields)."""


def _matches(message: Doc, query: str | None) -> bool:
    if not query:
        return True
    for term in query.lower().split():
        if term.startswith("from:"):
            if term[5:] not in str(message.get("from", "")).lower():
                return False
            continue
        haystack = " ".join(
            str(message.get(k, "")) for k in ("from", "to", "subject", "body")
        ).lower()
        if term not in haystack:
            return False
    return True


class Gmail(ServiceDouble):
    """Mailbox: search received messages, read one, send a message."""

    name = "gmail"

    @classmethod
    def empty_state(cls) -> Doc:
        return {"effects": [], "messages": [], "sent": []}

    @operation(
        kind=OperationKind.READ,
        permission="gmail.read",
        args=GmailSearch,
        result={"type": "array", "items": MESSAGE_SCHEMA},
    )
    def search(self, args: GmailSearch) -> JsonValue:
        """Messages matching the query, oldest first; each has id, from, to, subject, body,
        receivedAt."""

        def read(state: Doc) -> JsonValue:
            found = [
                m
                for m in sorted(state["messages"], key=lambda m: m["receivedAt"])
                if _matches(m, args.query) and (args.after is None or m["receivedAt"] > args.after)
            ]
            return found[: args.limit]

        return self._read("search", read)

    @operation(
        kind=OperationKind.READ_BY_ID,
        permission="gmail.read",
        args=MessageRef,
        name="getById",
        result={"anyOf": [MESSAGE_SCHEMA, {"type": "null"}]},
    )
    def get_by_id(self, args: MessageRef) -> JsonValue:
        """One received message by id, or null when there is none."""

        def read(state: Doc) -> JsonValue:
            return next((m for m in state["messages"] if m["id"] == args.id), None)

        return self._read("getById", read)

    @operation(
        kind=OperationKind.MUTATION,
        permission="gmail.send",
        args=GmailSend,
        result={
            "type": "object",
            "properties": {"id": _TEXT, "threadId": _TEXT},
            "required": ["id", "threadId"],
            "additionalProperties": False,
        },
    )
    def send(self, args: GmailSend, *, idempotency_key: str) -> JsonValue:
        """Send a message; returns {id, threadId}."""
        params = args.model_dump(mode="json", by_alias=True)

        def apply(state: Doc) -> JsonValue:
            message_id = f"sent-{len(state['sent']) + 1}"
            state["sent"].append({"id": message_id, **params})
            return {"id": message_id, "threadId": args.in_reply_to or message_id}

        return self._mutate("send", idempotency_key, params, apply)

    @send.reconciler
    def reconcile_send(self, args: GmailSend, idempotency_key: str) -> ReconcileOutcome:
        return self._reconcile_by_key("send", idempotency_key)
