"""A person's actions from the console, through the same `PersonActions` calls as the CLI.

Each action is audited under the console's actor. Actions that continue runs
(grant, resolve) hold the workflow's lease meanwhile, as ``keep grant`` and
``keep resolve`` do, and one action runs at a time in a console.
"""

from __future__ import annotations

import os
import threading
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, JsonValue, model_validator

from keep_sdk.app import Installation
from keep_sdk.contract.durable import Notification, NotificationOutcome, check_correlation_key
from keep_sdk.errors import ActionRefused
from keep_sdk.model import RunRecord, RunStatus

__all__ = ["ActionRequest", "ActionResult", "Actions", "NotifyResult"]

_RETRIED = (RunStatus.FAILED_LOGIC, RunStatus.FAILED_INTERNAL, RunStatus.CRASHED)

Choice = Literal["retry", "didnt-happen", "skip"]


class ActionRequest(BaseModel):
    """One action, as a form or an API body names it."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    action: Literal["grant", "resolve", "skip-event", "pause", "resume", "cancel"]
    workflow: str | None = Field(default=None, min_length=1, max_length=200)
    permission: str | None = Field(default=None, min_length=1, max_length=200)
    run: str | None = Field(default=None, min_length=1, max_length=64)
    event: str | None = Field(default=None, min_length=1, max_length=64)
    choice: Choice | None = None
    reason: str | None = Field(default=None, max_length=1000)

    @model_validator(mode="after")
    def _complete(self) -> ActionRequest:
        missing = [name for name in _NEEDS[self.action] if getattr(self, name) is None]
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


class NotifyResult(BaseModel):
    """What a notification did: as recorded in the inbox, and the run if it was continued."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    notification: Notification
    run: RunRecord | None = None


def _need(value: str | None) -> str:
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

    def notify(self, correlation_key: str, result: JsonValue) -> NotifyResult:
        """Record `result` for `correlation_key` in the inbox, then continue the parked run
        holding its workflow's lease, as ``keep notify`` does. A malformed key raises
        `InvalidArguments` and an unknown one `NotFound`, both before anything is written;
        while a worker holds the workflow, the notification stays for it to deliver."""
        check_correlation_key(correlation_key)
        with self._lock:
            runtime = self.installation.runtime
            notification = runtime.durable.notify(correlation_key, result, source=self.actor)
            run = None
            if notification.outcome is NotificationOutcome.PENDING:
                try:
                    with self.installation.holding(
                        notification.workflow, worker=self._worker, wait_s=self.wait_s
                    ):
                        run = runtime.deliver(notification.id)
                except ActionRefused:
                    run = None
            stored = next(
                n
                for n in runtime.durable.durable.list_notifications(notification.invocation_id)
                if n.id == notification.id
            )
        return NotifyResult(notification=stored, run=run)

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
            acts.check_permission(permission)
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
        choice = request.choice
        with inst.holding(run.workflow, worker=self._worker, wait_s=self.wait_s):
            if choice == "retry" and run.status in _RETRIED:
                ended = acts.retry(run.id, actor=who)
            elif choice == "retry":
                ended = acts.try_again(run.id, actor=who)
            elif choice == "didnt-happen":
                ended = acts.didnt_happen(run.id, actor=who)
            else:
                ended = acts.skip(run.id, actor=who)
        return ActionResult(
            message=f"run {ended.id} ({ended.handler}) is {ended.status.value} "
            f"at {ended.phase.value}",
            runs=[ended],
        )
