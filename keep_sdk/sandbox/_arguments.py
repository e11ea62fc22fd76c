"""Host-side checks of the arguments a script passed to a ctx call.

The script's stub serialized its arguments at call time; here they are a parsed
JSON list that already passed the boundary codec (`keep_sdk.contract.codec`). Each
function returns the arguments the host interface receives, or
raises a `LogicError` (`InvalidArguments` for a malformed call).
"""

from __future__ import annotations

import json
from functools import lru_cache
from typing import Any

from pydantic import JsonValue, ValidationError

from keep_sdk.contract.manifest import OperationManifest
from keep_sdk.errors import InvalidArguments, LogicError
from keep_sdk.model import HostPolicy, PublishRequest, explain_validation_error
from keep_sdk.sandbox._schemas import ArgumentSchema

__all__ = ["connector_arguments", "topic_arguments"]


@lru_cache(maxsize=256)
def _schema(schema_text: str) -> ArgumentSchema:
    return ArgumentSchema(schema_text)


_BY_OPERATION: dict[int, tuple[OperationManifest, ArgumentSchema]] = {}
_BY_OPERATION_LIMIT = 256


def _schema_of(op: OperationManifest) -> ArgumentSchema:
    """The checks of `op`'s argument schema, found by the object first (the manifest of
    a workflow version is one object), by the schema's text otherwise."""
    kept = _BY_OPERATION.get(id(op))
    if kept is not None and kept[0] is op:
        return kept[1]
    schema = _schema(json.dumps(op.arguments, sort_keys=True))
    if len(_BY_OPERATION) >= _BY_OPERATION_LIMIT:
        _BY_OPERATION.clear()
    _BY_OPERATION[id(op)] = (op, schema)
    return schema


def _path(parts: Any) -> str:
    return ".".join(str(part) for part in parts) or "(value)"


def _one_object(name: str, args: list[JsonValue]) -> dict[str, JsonValue]:
    if not args or args[0] is None:
        return {}
    first = args[0]
    if not isinstance(first, dict):
        raise InvalidArguments(
            f"ctx.{name} takes one object argument, got {type(first).__name__}",
            problems=[f"ctx.{name}: pass one object, e.g. ctx.{name}({{...}})"],
        )
    return first


def connector_arguments(
    name: str, op: OperationManifest, args: list[JsonValue], *, validate: bool
) -> dict[str, JsonValue]:
    """The one object argument of a connector call, checked against its JSON Schema.

    Reads are validated by the connector itself (`validate=False`); mutations are
    validated here because the sandbox returns them to the runtime unexecuted.
    """
    argument = _one_object(name, args)
    if validate:
        problems = [
            f"arguments of ctx.{name}: `{_path(error.absolute_path)}`: {error.message}"
            for error in _schema_of(op).errors(argument)
        ]
        if problems:
            raise InvalidArguments(
                f"invalid arguments for ctx.{name}: " + "; ".join(problems), problems=problems
            )
    return argument


def _topic(name: str, args: list[JsonValue], allowed: tuple[str, ...], verb: str) -> str:
    topic = args[0] if args else None
    if not isinstance(topic, str):
        raise InvalidArguments(
            f"ctx.{name} needs a topic name as its first argument",
            problems=[f"ctx.{name}: first argument must be a topic name string"],
        )
    if topic not in allowed:
        scope = ", ".join(allowed) or "none"
        raise LogicError(
            f"ctx.{name}: this handler may not {verb} topic {topic!r}; it may {verb}: {scope}"
        )
    return topic


def topic_arguments(
    name: str,
    args: list[JsonValue],
    *,
    subscribed: tuple[str, ...],
    publishable: tuple[str, ...],
    policy: HostPolicy,
) -> dict[str, JsonValue]:
    """The host-interface arguments of ``peek``, ``getByIds`` or ``publish``."""
    if name == "peek":
        topic = _topic(name, args, subscribed, "read")
        options = args[1] if len(args) > 1 and args[1] is not None else {}
        if not isinstance(options, dict):
            raise InvalidArguments("ctx.peek options must be an object like {limit: 10}")
        limit = options.get("limit", policy.peek_default_limit)
        if isinstance(limit, bool) or not isinstance(limit, int | float) or limit < 1:
            raise InvalidArguments(f"ctx.peek limit must be a positive number, got {limit!r}")
        return {"topic": topic, "limit": min(int(limit), policy.peek_max_limit)}
    if name == "getByIds":
        topic = _topic(name, args, subscribed, "read")
        ids = args[1] if len(args) > 1 else None
        if not isinstance(ids, list) or not all(isinstance(i, str) for i in ids):
            raise InvalidArguments(
                "ctx.getByIds needs a list of messageId strings as its second argument"
            )
        return {"topic": topic, "ids": list(ids)}
    topic = _topic(name, args, publishable, "publish to")
    event = args[1] if len(args) > 1 else None
    try:
        request = PublishRequest.model_validate(event)
    except ValidationError as exc:
        problems = explain_validation_error(exc, subject="ctx.publish event")
        raise InvalidArguments("; ".join(problems), problems=problems) from None
    return {
        "topic": topic,
        "event": request.model_dump(mode="json", by_alias=True, exclude_none=True),
    }
