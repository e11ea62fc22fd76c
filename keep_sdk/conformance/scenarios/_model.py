"""The shape of a conformance scenario file (YAML): a script, the world, steps, the end state.

```yaml
name: transient-backoff
description: A 503 from the sheet pauses the run; it resumes after the backoff.
script: |
  export default Keep.workflow({...})
connectors:                       # seed data of the built-in doubles
  sheets: {spreadsheets: {reports: {rows: []}}}
grants: [sheets.write]            # default: every permission of the built-in connectors
policy: {reconcile_attempts: 2}   # HostPolicy overrides (the runner's fast defaults otherwise)
steps:
  - publish: {topic: email.received, messageId: m1, title: "Email m1"}
  - fault: {connector: sheets, kind: transient, operation: appendRow}
  - run: {}                       # the scheduler runs until idle at the current time
  - expect: {runs: {"paused:transient": 1}}
  - wait: 60                      # let 60 s pass, running whatever falls due on the way
expect:                           # the end state
  events: {email.received: {m1: consumed}}
  runs: {committed: 1, "paused:transient": 0}
  ledger: [applied]
  effects: {sheets.appendRow: 1}
```
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, JsonValue, model_validator

from keep_sdk.connectors.builtin import FaultKind

__all__ = [
    "Act",
    "Crash",
    "Expectation",
    "FaultStep",
    "Kill",
    "PublishStep",
    "Scenario",
    "Step",
]


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)


class PublishStep(_Model):
    """Publish an event from outside the workflow (as a test or another system would)."""

    topic: str
    message_id: str = Field(alias="messageId")
    title: str
    payload: JsonValue = None


class FaultStep(_Model):
    """Make a built-in double fail the next `times` calls (None: until cleared)."""

    connector: str
    kind: FaultKind | Literal["clear"]
    operation: str | None = None
    times: int | None = 1
    delay_s: float = 0.0


class Crash(_Model):
    """Kill the host at a point of the next run; the runner then starts a new host on the same
    store and the same external world (restart recovery).

    `at` names a store commit point (``ledger.entry`` is between recording a mutation as
    applied and moving the run to ``mutated``); `call` names a connector operation
    (``sheets.appendRow``) with `when` ``before_effect`` or ``after_effect``.
    """

    at: str | None = None
    call: str | None = None
    when: Literal["before_effect", "after_effect"] = "before_effect"

    @model_validator(mode="after")
    def _one_target(self) -> Crash:
        if (self.at is None) == (self.call is None):
            raise ValueError("a crash names exactly one of `at` (a store point) or `call`")
        return self


class Kill(Crash):
    """SIGKILL a host process at a point (see `Crash` for `at`, `call` and `when`).

    `advance` moves the clock this many seconds before the host starts (so a poll or
    deadline is due in it); `worker` is its worker name: the default is the scenario's
    own host's, so the next host takes its leases and claims over at once; another name
    leaves them to expire. The killed host is always the reference `Runtime` (a
    `make_runtime` factory hosts what follows); on ``memory://`` the step is the
    in-process `Crash` at the same point.
    """

    advance: float = Field(default=0.0, ge=0)
    worker: str = "scenario-host"


RunSelector = Literal[
    "escalated", "approval", "failed", "transient", "waiting", "timeout", "latest"
]


class NotifyStep(_Model):
    """Deliver `result` for the durable operation of the selected run (default: the oldest
    run that waits), `times` times (a repeat is recorded as a duplicate); `outcome` is
    what the last delivery must be recorded as."""

    result: JsonValue = None
    run: Literal["waiting", "timeout", "latest", "first"] = "waiting"
    times: int = Field(default=1, ge=1)
    outcome: Literal["pending", "applied", "duplicate", "ignored"] | None = None


class Act(_Model):
    """A person's action.

    `action` is one of skip_event (with topic and messageId), try_again,
    didnt_happen, skip, retry (with `run`: which run), grant (with
    permission), pause, resume. `error` expects the action to be refused with
    a message containing it.
    """

    action: Literal[
        "skip_event",
        "try_again",
        "didnt_happen",
        "skip",
        "retry",
        "grant",
        "pause",
        "resume",
        "cancel",
        "extend",
        "start_again",
        "supply",
        "skip_wait",
    ]
    run: RunSelector = "escalated"
    topic: str | None = None
    message_id: str | None = Field(default=None, alias="messageId")
    permission: str | None = None
    error: str | None = None
    result: JsonValue = Field(default=None, description="The result a person supplies.")
    seconds: float = Field(default=86_400.0, gt=0, description="How much longer to wait.")


class Expectation(_Model):
    """What the store and the external world hold. Only what is given is checked.

    - `events`: topic → messageId → status;
    - `runs`: run status → count (a status left out is not checked);
    - `ledger`: the ledger statuses in creation order;
    - `effects`: ``connector.operation`` → applied external effects;
    - `rows`: spreadsheet id → rows (values) in the sheets double;
    - `messages`: channel → message texts in the slack double;
    - `state`: handler → its stored state;
    - `audit`: the audit log's actions in order;
    - `escalations`: how many times a run was escalated to a person;
    - `mutation_results`: handler → the statuses ``next`` received, in run order.
    """

    events: dict[str, dict[str, str]] | None = None
    runs: dict[str, int] | None = None
    ledger: list[str] | None = None
    effects: dict[str, int] | None = None
    rows: dict[str, list[list[Any]]] | None = None
    messages: dict[str, list[str]] | None = None
    state: dict[str, JsonValue] | None = None
    audit: list[str] | None = None
    escalations: int | None = None
    mutation_results: dict[str, list[str]] | None = None


class Step(_Model):
    """One step; exactly one field is set."""

    publish: PublishStep | None = None
    fault: FaultStep | None = None
    seed: dict[str, dict[str, Any]] | None = None
    run: dict[str, Any] | None = Field(
        default=None, description="Run the scheduler until idle (no options yet: `{}`)."
    )
    advance: Annotated[float, Field(ge=0)] | None = Field(
        default=None, description="Move the clock forward this many seconds, then run."
    )
    wait: Annotated[float, Field(ge=0)] | None = Field(
        default=None,
        description="Let this many seconds pass, jumping to each due time and running.",
    )
    crash: Crash | None = None
    kill: Kill | None = Field(
        default=None,
        description="Run the scheduler in a separate host process and SIGKILL it at this "
        "point (store point `at`, or `call` before/after its effect); later steps run on a "
        "new host. On memory:// (one process) it is the in-process `crash`.",
    )
    restart: bool | None = Field(default=None, description="Start a new host (no crash).")
    act: Act | None = None
    deploy: str | None = Field(default=None, description="Deploy this script as a new version.")
    notify: NotifyStep | None = None
    expect: Expectation | None = None

    @model_validator(mode="after")
    def _exactly_one(self) -> Step:
        given = [name for name, value in self if value is not None]
        if len(given) != 1:
            raise ValueError(
                "a step has exactly one of publish, fault, seed, run, advance, wait, crash, "
                "kill, restart, act, deploy, notify, expect; this one has: "
                f"{', '.join(given) or 'none'}"
            )
        return self


class Scenario(_Model):
    """A scenario: a script, the world it runs in, the steps, the expected end state."""

    name: str
    description: str
    covers: list[str] = Field(default_factory=list, description="Spec patterns and paths.")
    script: str
    connectors: dict[str, dict[str, Any]] = Field(default_factory=dict)
    grants: list[str] | None = None
    policy: dict[str, Any] = Field(default_factory=dict)
    steps: list[Step]
    expect: Expectation
