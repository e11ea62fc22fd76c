"""`PhaseHost`: what ``ctx`` can reach in one phase, checked again on the host side.

The sandbox builds ``ctx`` from the phase table and checks topics, so a
well-behaved call never reaches here in the wrong phase; this class refuses
such calls anyway (`PhaseViolation`), whatever the script did to get there.
Publishes are buffered: they are committed with the run, never before. Any
error raised here ends the phase (the sandbox never lets the script catch it).
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from pydantic import JsonValue, ValidationError

from keep_sdk.connectors import ConnectorSet
from keep_sdk.contract.manifest import Manifest
from keep_sdk.contract.permissions import require_permission
from keep_sdk.contract.phases import (
    MUTATING_KINDS,
    TOPIC_OPERATIONS,
    allowed_phases,
    where_allowed,
)
from keep_sdk.errors import InvalidArguments, PhaseViolation
from keep_sdk.model import (
    Event,
    HandlerPhase,
    HostPolicy,
    OperationKind,
    PublishRequest,
    explain_validation_error,
)
from keep_sdk.runtime.deadline import read_within
from keep_sdk.runtime.frozen import check_frozen
from keep_sdk.stores import Publication, Store

__all__ = ["PhaseHost", "script_event"]


def script_event(event: Event) -> JsonValue:
    """An event as scripts see it: no host metadata (status, reserved_by, created_by)."""
    return {
        "topic": event.topic,
        "messageId": event.message_id,
        "title": event.title,
        "payload": event.payload,
        "createdAt": event.created_at.isoformat().replace("+00:00", "Z"),
    }


@dataclass
class PhaseHost:
    """The host side of one phase of one run.

    `subscribed` are the topics peek/getByIds may read; `publishable` the
    topics publish may write. `grants` are the workflow's granted permissions.
    `message_id_seed` makes host-generated messageIds stable across a replay
    of the same run chain. `frozen` is the connector manifest `version` was
    deployed with; calls are checked against it (`keep_sdk.runtime.frozen`).
    `started` is when the phase began: a connector read gets the phase's wall-clock
    time left, and one that does not answer in it fails as `TransientError`.
    """

    store: Store
    connectors: ConnectorSet
    policy: HostPolicy
    workflow: str
    handler: str
    phase: HandlerPhase
    subscribed: Sequence[str]
    publishable: Sequence[str]
    grants: Sequence[str]
    message_id_seed: str
    frozen: Manifest | None = None
    version: int = 0
    publishes: list[Publication] = field(default_factory=list)
    started: float = field(default_factory=time.monotonic)

    def call(self, name: str, arguments: JsonValue) -> JsonValue:
        """Perform ``ctx.<name>(arguments)`` (the `keep_sdk.sandbox.HostInterface` contract).

        Raises a `KeepError` to refuse or fail the call; that ends the phase.
        """
        if name in TOPIC_OPERATIONS:
            self._check_phase(name, name)
            args = arguments if isinstance(arguments, dict) else {}
            if name == "peek":
                return self._peek(args)
            if name == "getByIds":
                return self._get_by_ids(args)
            return self._publish(args)
        connector, _, operation = name.partition(".")
        declared = self.connectors.operation(connector, operation)
        check_frozen(
            self.frozen,
            connector,
            operation,
            declared,
            workflow=self.workflow,
            version=self.version,
        )
        if declared.kind in MUTATING_KINDS:
            raise PhaseViolation(
                f"ctx.{name} is a mutation; the host performs it only as the last step "
                "of mutate, never as a call that returns",
                operation=name,
                phase=self.phase.value,
            )
        self._check_phase(name, declared.kind)
        require_permission(f"ctx.{name}", declared.permission, self.grants, self.workflow)
        left = self.policy.sandbox.wall_time_s - (time.monotonic() - self.started)
        return read_within(
            lambda: self.connectors.invoke(connector, operation, arguments),
            timeout_s=left,
            what=f"ctx.{name}",
        )

    def _check_phase(self, name: str, operation: OperationKind | str) -> None:
        if self.phase not in allowed_phases(operation, self.policy.mutate_reads):
            where = where_allowed(operation, self.policy.mutate_reads)
            raise PhaseViolation(
                f"ctx.{name} is not allowed in {self.phase.value}; it is allowed in: {where}",
                operation=name,
                phase=self.phase.value,
            )

    def _topic(self, args: dict[str, Any], allowed: Sequence[str], verb: str) -> str:
        topic = args.get("topic")
        if not isinstance(topic, str) or topic not in allowed:
            known = ", ".join(allowed) or "none"
            raise PhaseViolation(
                f"{self.handler} cannot {verb} topic {topic!r}; it may {verb}: {known}",
                operation=verb,
                phase=self.phase.value,
            )
        return topic

    def _peek(self, args: dict[str, Any]) -> JsonValue:
        topic = self._topic(args, self.subscribed, "peek")
        limit = args.get("limit", self.policy.peek_default_limit)
        if limit is None:
            limit = self.policy.peek_default_limit
        if not isinstance(limit, int) or isinstance(limit, bool) or limit < 1:
            raise InvalidArguments(
                f"ctx.peek({topic!r}, {{limit}}): limit must be a positive integer, got {limit!r}"
            )
        limit = min(limit, self.policy.peek_max_limit)
        events = self.store.pending_events(self.workflow, topic, limit=limit)
        return [script_event(e) for e in events]

    def _get_by_ids(self, args: dict[str, Any]) -> JsonValue:
        topic = self._topic(args, self.subscribed, "read")
        ids = args.get("ids")
        if not isinstance(ids, list) or not all(isinstance(i, str) for i in ids):
            raise InvalidArguments(
                f"ctx.getByIds({topic!r}, ids): ids must be an array of messageId strings"
            )
        return [script_event(e) for e in self.store.events_by_ids(self.workflow, topic, ids)]

    def _publish(self, args: dict[str, Any]) -> JsonValue:
        topic = self._topic(args, self.publishable, "publish to")
        try:
            request = PublishRequest.model_validate(args.get("event"))
        except ValidationError as exc:
            problems = explain_validation_error(exc)
            raise InvalidArguments(
                f"invalid event for ctx.publish({topic!r}, …):\n  " + "\n  ".join(problems),
                problems=problems,
            ) from None
        default_id = self._host_message_id(topic, len(self.publishes))
        publication = Publication.from_request(topic, request, default_message_id=default_id)
        self.publishes.append(publication)
        return {"messageId": publication.message_id}

    def _host_message_id(self, topic: str, index: int) -> str:
        digest = hashlib.sha256(
            "\x1f".join((self.message_id_seed, self.phase.value, topic, str(index))).encode()
        ).hexdigest()
        return f"host-{digest[:24]}"
