"""``keep publish TOPIC``: feed an event into a workflow from the command line.

Calls `PersonActions.publish` (audited, idempotent per messageId, only topics
the workflow declares). The event waits for the workflow's consumers: `keep run
FILE --until-idle` or a `keep worker` delivers it.
"""

from __future__ import annotations

import json

import click
from pydantic import ValidationError

from keep_sdk.cli._options import json_option, opened, store_option
from keep_sdk.cli.support import actor, print_json, reports_errors
from keep_sdk.errors import InvalidArguments
from keep_sdk.stores import Publication

__all__ = ["publish_command"]


@click.command("publish")
@click.argument("topic")
@click.option("--message-id", required=True, help="The event's id in the topic (idempotency).")
@click.option("--title", required=True, help="What the event is, for people.")
@click.option("--payload", default="null", show_default=True, help="The payload, as JSON.")
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
    try:
        data = json.loads(payload)
    except json.JSONDecodeError as exc:
        raise click.BadParameter(f"not valid JSON: {exc}", param_hint="--payload") from None
    try:
        publication = Publication(topic=topic, message_id=message_id, title=title, payload=data)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(part) for part in first["loc"])
        raise click.UsageError(f"{where}: {first['msg']}") from None
    with opened(store_url, must_exist=True) as inst:
        target = workflow or inst.actions.workflow_for_topic(topic)
        try:
            result = inst.actions.publish(target, publication, actor=actor())
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
