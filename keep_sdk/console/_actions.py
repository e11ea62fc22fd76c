"""A person's actions from the console, through the same `PersonActions` calls as the CLI.

Each action is audited under the console's actor. Actions that continue runs
(grant, resolve) hold the workflow's lease meanwhile, as ``keep grant`` and
``keep resolve`` do, and one action runs at a time in a console.
"""

from __future__ import annotations

import json
import os
import threading
from typing import Literal, TypeVar

from pydantic import BaseModel, ConfigDict, Field, JsonValue, model_validator

from keep_sdk.app import Installation
from keep_sdk.errors import InvalidArguments
from keep_sdk.model import RunRecord
from keep_sdk.runtime import NotifyReceipt, ResolveChoice

__all__ = ["ActionRequest", "ActionResult", "Actions"]

_T = TypeVar("_T")


class ActionRequest(BaseModel):
    """One action, as a form or an API body names it."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    action: Literal["grant", "resolve", "skip-event", "pause", "resume", "cancel"]
    workflow: str | None = Field(default=None, min_length=1, max_length=200)
    permission: str | None = Field(default=None, min_length=1, max_length=200)
    run: str | None = Field(default=None, min_length=1, max_length=64)
    event: str | None = Field(default=None, min_length=1, max_length=64)
    choice: ResolveChoice | None = None
    reason: str | None = Field(default=None, max_length=1000)
    result: str | None = Field(
        default=None,
        max_length=1_048_576,
        description="With choice happened: what the service returned, as JSON text.",
    )

    @model_validator(mode="after")
    def _complete(self) -> ActionRequest:
        needs = _NEEDS[self.action]
        if self.choice is ResolveChoice.HAPPENED:
            needs = (*needs, "result")
        missing = [name for name in needs if getattr(self, name) is None]
        if missing:
            raise ValueError(f"the {self.action} action needs: {', '.join(missing)}")
        return self


class ActionResult(BaseModel):
    """What an action did, in words, and the runs it continued as they ended."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    message: str
    runs: list[RunRecord] = Field(default_factory=list)


_NEEDS: dict[str, tuple[str, ...]] = {
    "grant": ("workflow", "permission"),
    "resolve": ("run", "choice"),
    "skip-event": ("event",),
    "pause": ("workflow",),
    "resume": ("workflow",),
    "cancel": ("run",),
}


def _need(value: _T | None) -> _T:
    assert value is not None, "ActionRequest checks its fields"
    return value


class Actions:
    """Performs `ActionRequest`s on an installation as `actor`."""

    def __init__(self, installation: Installation, *, actor: str, wait_s: float) -> None:
        self.installation = installation
        self.actor = actor
        self.wait_s = wait_s
        self._lock = threading.Lock()
        self._worker = f"console:{os.getpid()}"

    def perform(self, request: ActionRequest) -> ActionResult:
        """Do `request`; a refused action (`ActionRefused`, `NotFound`, a conflict) raises
        with nothing changed."""
        with self._lock:
            return self._perform(request)

    def notify(self, correlation_key: str, result: JsonValue) -> NotifyReceipt:
        """Deliver `result` for `correlation_key` as ``keep notify`` does
        (`Installation.notify`), audited under the console's actor."""
        with self._lock:
            return self.installation.notify(
                correlation_key, result, source=self.actor, worker=self._worker, wait_s=self.wait_s
            )

    def _perform(self, request: ActionRequest) -> ActionResult:
        inst, who, action = self.installation, self.actor, request.action
        acts = inst.actions
        if action == "skip-event":
            event = acts.skip_event(_need(request.event), actor=who, reason=request.reason)
            return ActionResult(message=f"skipped {event.title!r}; it will not be delivered")
        if action in ("pause", "resume"):
            workflow = _need(request.workflow)
            if action == "pause":
                acts.pause(workflow, actor=who, reason=request.reason)
                return ActionResult(
                    message=f"paused {workflow}; runs already waiting stay as they are"
                )
            acts.resume(workflow, actor=who)
            return ActionResult(message=f"resumed {workflow}")
        if action == "grant":
            workflow = _need(request.workflow)
            permission = _need(request.permission)
            inst.store.get_workflow(workflow)
            acts.check_permission(permission, workflow=workflow)
            with inst.holding(workflow, worker=self._worker, wait_s=self.wait_s):
                resumed = acts.grant(workflow, permission, actor=who)
            return ActionResult(message=f"granted {permission} to {workflow}", runs=resumed)
        run = inst.store.get_run(_need(request.run))
        if action == "cancel":
            with inst.holding(run.workflow, worker=self._worker, wait_s=self.wait_s):
                ended = acts.cancel(run.id, actor=who, reason=request.reason)
            return ActionResult(
                message=f"cancelled the wait of run {ended.id}; it is {ended.status.value}",
                runs=[ended],
            )
        with inst.holding(run.workflow, worker=self._worker, wait_s=self.wait_s):
            ended = acts.resolve(
                run.id, _need(request.choice), actor=who, result=_result(request.result)
            )
        return ActionResult(
            message=f"run {ended.id} ({ended.handler}) is {ended.status.value} "
            f"at {ended.phase.value}",
            runs=[ended],
        )


def _result(text: str | None) -> JsonValue:
    """The ``result`` field as JSON; `InvalidArguments` saying where it is not."""
    if text is None:
        return None
    try:
        value: JsonValue = json.loads(text)
    except json.JSONDecodeError as exc:
        raise InvalidArguments(
            f"the result is not JSON ({exc.msg} at line {exc.lineno}, column {exc.colno}); "
            'give what the service returned, such as {"id": "42"}, or null',
            problems=[exc.msg],
        ) from None
    return value
