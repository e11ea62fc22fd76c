"""`slack`: a chat double (postMessage, which cannot be reconciled)."""

from __future__ import annotations

from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field, JsonValue
from pydantic.alias_generators import to_camel

from keep_sdk.connectors.builtin._double import Doc, ServiceDouble
from keep_sdk.connectors.operation import operation
from keep_sdk.errors import PreconditionFailed
from keep_sdk.model import OperationKind

__all__ = ["PostMessage", "Slack"]


class PostMessage(BaseModel):
    """Arguments of ``ctx.slack.postMessage``."""

    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, extra="forbid")

    channel: Annotated[str, Field(pattern=r"^#[a-z0-9][a-z0-9_-]*$")]
    text: Annotated[str, Field(min_length=1, max_length=40_000)]


class Slack(ServiceDouble):
    """Chat: post a message to a channel. Posting has no reconcile: an uncertain post
    is escalated to a person."""

    name = "slack"

    @classmethod
    def empty_state(cls) -> Doc:
        return {"effects": [], "channels": {}}

    @operation(
        kind=OperationKind.MUTATION,
        permission="slack.write",
        args=PostMessage,
        result={
            "type": "object",
            "properties": {"channel": {"type": "string"}, "ts": {"type": "string"}},
            "required": ["channel", "ts"],
            "additionalProperties": False,
        },
    )
    def post_message(self, args: PostMessage, *, idempotency_key: str) -> JsonValue:
        """Post a message; returns {channel, ts}."""
        params = args.model_dump(mode="json", by_alias=True)

        def apply(state: Doc) -> JsonValue:
            if args.channel not in state["channels"]:
                known = ", ".join(sorted(state["channels"])) or "none"
                raise PreconditionFailed(
                    f"channel {args.channel!r} does not exist (channel_not_found); "
                    f"existing: {known}"
                )
            messages = state["channels"][args.channel]
            ts = f"{len(messages) + 1}.000100"
            messages.append({"ts": ts, "text": args.text})
            return {"channel": args.channel, "ts": ts}

        return self._mutate("postMessage", idempotency_key, params, apply)
