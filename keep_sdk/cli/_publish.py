"""``keep publish TOPIC``: feed an event into a workflow from the command line.

Publishes as `PersonActions.publish` does (audited, idempotent per messageId, only
topics the workflow declares; `keep_sdk.stores.publish_from_outside`) on the store alone
(`keep_sdk.cli._options.stored`), so the command starts without importing the runtime.
The event waits for the workflow's consumers: `keep run FILE --until-idle` or a `keep
worker` delivers it.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import click
from pydantic import ValidationError

from keep_sdk.cli._options import json_option, store_option, stored
from keep_sdk.cli.support import actor, decode, print_json, read_text, reports_errors
from keep_sdk.errors import InvalidArguments
from keep_sdk.stores import Publication

__all__ = ["publish_command"]


@click.command("publish")
@click.argument("topic")
@click.option("--message-id", required=True, help="The event's id in the topic (idempotency).")
@click.option("--title", required=True, help="What the event is, for people.")
@click.option(
    "--payload",
    default="null",
    show_default=True,
    help="The payload: JSON text, @FILE to read it from a file, or - to read it from stdin.",
)
@click.option(
    "--workflow",
    default=None,
    help="The workflow to publish into (default: the one deployed workflow declaring TOPIC).",
)
@store_option
@json_option
@reports_errors
def publish_command(
    topic: str,
    message_id: str,
    title: str,
    payload: str,
    workflow: str | None,
    store_url: str | None,
    as_json: bool,
) -> None:
    """Publish an event into TOPIC; a pending event with the same --message-id is replaced.

    Exit 2 for a payload that is not JSON, an event a script could not publish
    (over the size or depth limit, measured in UTF-8 bytes of JSON) or a bad id or
    title; exit 1 when the workflow does not declare TOPIC.
    """
    text = _payload_text(payload)
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise click.BadParameter(f"not valid JSON: {exc}", param_hint="--payload") from None
    try:
        publication = Publication(topic=topic, message_id=message_id, title=title, payload=data)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(part) for part in first["loc"])
        raise click.UsageError(f"{where}: {first['msg']}") from None
    with stored(store_url) as store:
        try:
            target, result = store.publish(publication, workflow=workflow, actor=actor())
        except InvalidArguments as exc:
            raise click.BadParameter(str(exc), param_hint="--payload") from None
    if as_json:
        print_json(result)
    else:
        event = result.event
        click.echo(
            f"{result.outcome.value}: {event.title!r} in {target}/{event.topic} "
            f"({event.id}, {event.status.value})"
        )


def _payload_text(value: str) -> str:
    """The --payload JSON text: given, read from ``@FILE`` or (``-``) from stdin; an
    unreadable file or text that is not UTF-8 exits 2."""
    if value == "-":
        return decode(sys.stdin.buffer.read(), "stdin")
    if value.startswith("@"):
        return read_text(Path(value[1:]))
    return value
