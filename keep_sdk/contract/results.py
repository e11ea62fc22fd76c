"""What ``ctx``'s own methods return to a script, as JSON Schema.

A connector operation declares its result in its manifest (`OperationManifest.result`);
the topic methods every handler shares are declared here once, for the validator, the
generated TypeScript and the prompt reference to read the same shapes.
"""

from __future__ import annotations

from typing import Any, Final

__all__ = ["EVENT_SCHEMA", "TOPIC_RESULTS", "schema_fields"]

EVENT_SCHEMA: Final[dict[str, Any]] = {
    "type": "object",
    "description": "An event as a handler reads it (`ctx.peek`, `ctx.getByIds`).",
    "properties": {
        "topic": {"type": "string", "description": "The topic it was published to."},
        "messageId": {
            "type": "string",
            "description": "Its id in the topic; reserve events by it.",
        },
        "title": {"type": "string", "description": "What it represents, in the user's terms."},
        "payload": {"description": "The JSON value it was published with."},
        "createdAt": {
            "type": "string",
            "format": "date-time",
            "description": "ISO 8601 time it was published.",
        },
    },
    "required": ["topic", "messageId", "title", "payload", "createdAt"],
    "additionalProperties": False,
}
"""An event as ``ctx.peek`` and ``ctx.getByIds`` return it (the runtime's ``script_event``)."""

TOPIC_RESULTS: Final[dict[str, dict[str, Any]]] = {
    "peek": {"type": "array", "items": EVENT_SCHEMA},
    "getByIds": {"type": "array", "items": EVENT_SCHEMA},
    "publish": {
        "type": "object",
        "properties": {"messageId": {"type": "string"}},
        "required": ["messageId"],
        "additionalProperties": False,
    },
}
"""What each topic method of ``ctx`` resolves to, by method name."""


def schema_fields(schema: Any) -> list[str] | None:
    """The property names an object `schema` declares, or None when it declares none."""
    if not isinstance(schema, dict):
        return None
    properties = schema.get("properties")
    if not isinstance(properties, dict) or not properties:
        return None
    return [str(name) for name in properties]
