"""What comes into a store from outside a run: a person's published event and a durable
operation's result.

`PersonActions` (the runtime, the console) and the store-only paths of ``keep publish``
and ``keep notify`` (which import no runtime) call these same functions, so the checks,
the audit record and the error messages are one.
"""

from __future__ import annotations

from pydantic import JsonValue

from keep_sdk.contract.admission import check_notification_result, check_publication
from keep_sdk.contract.durable import Notification, check_correlation_key
from keep_sdk.contract.workflow import WorkflowManifest
from keep_sdk.errors import ActionRefused, ConfigurationError
from keep_sdk.model import HostPolicy
from keep_sdk.stores._durable import SupportsDurable
from keep_sdk.stores._models import Publication, PublishResult
from keep_sdk.stores._protocol import Store

__all__ = ["publish_from_outside", "record_notification", "workflow_for_topic"]


def _topics(store: Store, workflow: str) -> list[str]:
    return WorkflowManifest.model_validate(store.get_workflow_version(workflow).manifest).topics


def workflow_for_topic(store: Store, topic: str) -> str:
    """The one deployed workflow whose current version declares `topic`; `ActionRefused`
    when none or several do (then name the workflow explicitly)."""
    found = [
        record.name for record in store.list_workflows() if topic in _topics(store, record.name)
    ]
    if len(found) != 1:
        which = f"workflows {', '.join(found)} declare" if found else "no workflow declares"
        raise ActionRefused(f"{which} the topic {topic!r}; name one with --workflow")
    return found[0]


def publish_from_outside(
    store: Store, workflow: str, publication: Publication, *, policy: HostPolicy, actor: str
) -> PublishResult:
    """Publish an event from outside into a topic the workflow's current version declares,
    audited as ``publish`` (`keep_sdk.runtime.PersonActions.publish` states the contract):
    `ActionRefused` for an undeclared topic, `InvalidArguments` for an event ``ctx.publish``
    would refuse under `policy`; nothing is written then."""
    topics = _topics(store, workflow)
    if publication.topic not in topics:
        raise ActionRefused(
            f"workflow {workflow!r} declares no topic {publication.topic!r}; its topics: "
            f"{', '.join(topics) or 'none'}"
        )
    check_publication(
        publication.topic, publication.message_id, publication.title, publication.payload, policy
    )
    store.record_audit(
        actor=actor,
        action="publish",
        target=f"{publication.topic}/{publication.message_id}",
        workflow=workflow,
    )
    return store.publish(workflow, publication)


def record_notification(
    store: Store,
    correlation_key: str,
    result: JsonValue,
    *,
    source: str,
    policy: HostPolicy,
) -> Notification:
    """Record a durable operation's `result` for `correlation_key` in the inbox after
    checking both (`InvalidArguments`, nothing written); `NotFound` for an unknown key, and
    `ConfigurationError` for a store that keeps no durable invocations."""
    if not isinstance(store, SupportsDurable):
        raise ConfigurationError(
            f"the store {type(store).__name__} does not keep durable invocations; use a "
            "TransactionalStore whose transactions implement DurableRows"
        )
    check_correlation_key(correlation_key)
    check_notification_result(result, policy)
    return store.receive_notification(correlation_key, result, source=source)
