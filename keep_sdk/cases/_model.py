"""The one YAML model of workflow cases (``*.keep.yaml``) and conformance scenarios.

A case file names a script (``workflow: invoices.js``) and lists cases; a scenario
file holds its script inline with a name, a description and what it covers. Both
are made of the same steps (`Step`) and expectations (`Expectation`); docs/cases.md
documents every field.
"""

from __future__ import annotations

import datetime as dt
from typing import Annotated, Any, Literal

from pydantic import (
    AwareDatetime,
    BaseModel,
    ConfigDict,
    Field,
    JsonValue,
    model_validator,
)

from keep_sdk.connectors.builtin import FaultKind

__all__ = [
    "CASE_START",
    "Act",
    "Answer",
    "Case",
    "CaseFile",
    "Crash",
    "Expectation",
    "ExpectedMutation",
    "ExpectedPublish",
    "ExpectedWait",
    "FaultStep",
    "Kill",
    "NotifyStep",
    "PublishStep",
    "Scenario",
    "StandInSeed",
    "Step",
]

CASE_START = dt.datetime(2026, 11, 22, 9, 0, tzinfo=dt.UTC)
"""Where the clock of a case or scenario starts unless it says `start`: 09:00 UTC on a
Sunday."""


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)


class PublishStep(_Model):
    """An event arrives from outside the workflow (as a test or another system would)."""

    topic: str
    message_id: str = Field(alias="messageId")
    title: str
    payload: JsonValue = None


class FaultStep(_Model):
    """The next `times` calls of a double's `operation` (any when None) fail like the
    service would (`times` None: until a ``clear``); ``kind: clear`` removes its faults."""

    connector: str
    kind: FaultKind | Literal["clear"]
    operation: str | None = None
    times: Annotated[int, Field(ge=1)] | None = 1
    delay_s: float = Field(default=0.0, ge=0, description="For ``slow``: seconds of delay.")


class Crash(_Model):
    """Kill the host at a point of the next run; a new host then starts on the same store
    and the same doubles (restart recovery).

    `at` names a store commit point (``ledger.entry`` is between recording a mutation as
    applied and moving the run to ``mutated``); `call` names a connector operation
    (``sheets.appendRow``, ``approvals.request``, ``jobs.poll:submit``) with `when`
    ``before_effect`` or ``after_effect``.
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
    deadline is due in it); `worker` is its worker name: the default is the harness's
    own host's, so the next host takes its leases and claims over at once; another name
    leaves them to expire. On ``memory://`` (one process) the step is the in-process
    `Crash` at the same point.
    """

    advance: float = Field(default=0.0, ge=0)
    worker: str = "scenario-host"


RunSelector = Literal[
    "escalated", "approval", "failed", "transient", "waiting", "timeout", "latest"
]
"""Which run a person acts on: the latest run with that status (``escalated``:
paused for reconciliation; ``failed``: failed or crashed; ``latest``: any)."""


class NotifyStep(_Model):
    """Deliver `result` for the durable operation of the selected run (default: the oldest
    run that waits), `times` times (a repeat is recorded as a duplicate); `outcome` is
    what the last delivery must be recorded as.

    For an ``approvals.request`` the result is the person's answer (for instance
    ``{approved: true}`` or ``{approved: false, reason: ...}``)."""

    result: JsonValue = None
    run: Literal["waiting", "timeout", "latest", "first"] = "waiting"
    times: int = Field(default=1, ge=1)
    outcome: Literal["pending", "applied", "duplicate", "ignored"] | None = None


class Act(_Model):
    """A person's action.

    `action` is one of grant and revoke (with `permission`), skip_event (with `topic`
    and `messageId`), pause and resume (the workflow), or an action on one run:
    try_again, didnt_happen, skip, retry, cancel, extend (by `seconds`), start_again,
    supply (`result`), skip_wait. `run` selects that run (default: the latest run
    escalated for reconciliation, else the latest that waits or failed). `error`
    expects the action to be refused with a message containing it.
    """

    action: Literal[
        "grant",
        "revoke",
        "skip_event",
        "try_again",
        "didnt_happen",
        "skip",
        "retry",
        "pause",
        "resume",
        "cancel",
        "extend",
        "start_again",
        "supply",
        "skip_wait",
    ]
    run: RunSelector | None = None
    topic: str | None = None
    message_id: str | None = Field(default=None, alias="messageId")
    permission: str | None = None
    error: str | None = None
    result: JsonValue = Field(default=None, description="The result a person supplies.")
    seconds: float = Field(default=86_400.0, gt=0, description="How much longer to wait.")


class ExpectedMutation(_Model):
    """A mutation a run asked for: `call` is ``connector.operation``; `arguments` a subset."""

    call: str
    arguments: dict[str, JsonValue] | None = None
    status: Literal["applied", "failed", "in_flight", "needs_reconcile", "indeterminate"] | None = (
        None
    )


class ExpectedPublish(_Model):
    """An event a run published; `payload` is a subset."""

    topic: str
    message_id: str | None = Field(default=None, alias="messageId")
    title: str | None = None
    payload: JsonValue = None


class ExpectedWait(_Model):
    """A run that waits (for a person, an approval, a notification, a poll or a backoff):
    only what is given is compared."""

    handler: str | None = None
    status: str | None = Field(default=None, description="paused:waiting, paused:timeout, ...")
    operation: str | None = Field(
        default=None, description="The ``connector.operation`` it waits on (durable or ledger)."
    )


class Expectation(_Model):
    """What the store and the doubles hold. Only what is given is checked.

    - `mutations`: every mutation the runs asked for, in order (subset arguments);
    - `publishes`: every event a run published, in order (subset payload);
    - `events`: topic → messageId → status;
    - `runs`: run status → count (a status left out is not checked);
    - `waiting`: the runs that wait, oldest first (``paused:*``, failed, crashed);
    - `ledger`: the ledger statuses in creation order;
    - `effects`: ``connector.operation`` → applied external effects of a double, or the
      mutations and durable starts a stand-in recorded;
    - `rows`: spreadsheet id → rows (values) in the sheets double;
    - `messages`: channel → message texts in the slack double;
    - `state`: handler → its stored state (whole);
    - `audit`: the actions a person took, in order;
    - `escalations`: how many times a run was escalated to a person;
    - `mutation_results`: handler → the statuses ``next`` received, in run order.
    """

    mutations: list[ExpectedMutation] | None = None
    publishes: list[ExpectedPublish] | None = None
    events: dict[str, dict[str, str]] | None = None
    runs: dict[str, int] | None = None
    waiting: list[ExpectedWait] | None = None
    ledger: list[str] | None = None
    effects: dict[str, int] | None = None
    rows: dict[str, list[list[Any]]] | None = None
    messages: dict[str, list[str]] | None = None
    state: dict[str, JsonValue] | None = None
    audit: list[str] | None = None
    escalations: int | None = None
    mutation_results: dict[str, list[str]] | None = None


_STEPS = (
    "publish, seed, fault, run, advance, wait, clock, poll, notify, act, deploy, crash, "
    "kill, restart, expect"
)


class Step(_Model):
    """One step; exactly one field is set."""

    publish: PublishStep | None = None
    seed: dict[str, Any] | None = Field(
        default=None,
        description="Seed data of doubles (merged into what they hold), as `connectors`; "
        "a ``faults`` list injects faults.",
    )
    fault: FaultStep | None = None
    run: dict[str, Any] | None = Field(
        default=None, description="Run the scheduler until nothing is due: `{}`."
    )
    advance: Annotated[float, Field(ge=0)] | None = Field(
        default=None, description="Move the clock forward this many seconds, then run."
    )
    wait: Annotated[float, Field(ge=0)] | None = Field(
        default=None,
        description="Let this many seconds pass, jumping to each due time and running.",
    )
    clock: AwareDatetime | None = Field(
        default=None,
        description="Set the clock to this ISO time (never backwards), running what falls "
        "due on the way.",
    )
    poll: str | None = Field(
        default=None, description="Run this producer once now, whatever its schedule."
    )
    notify: NotifyStep | None = None
    act: Act | None = None
    deploy: str | None = Field(default=None, description="Deploy this script as a new version.")
    crash: Crash | None = None
    kill: Kill | None = Field(
        default=None,
        description="Run the scheduler in a separate host process and SIGKILL it at this "
        "point (store point `at`, or `call` before/after its effect); later steps run on a "
        "new host. On memory:// (one process) it is the in-process `crash`.",
    )
    restart: bool | None = Field(default=None, description="Start a new host (no crash).")
    expect: Expectation | None = None

    @model_validator(mode="after")
    def _exactly_one(self) -> Step:
        given = [name for name, value in self if value is not None]
        if len(given) != 1:
            raise ValueError(
                f"a step has exactly one of {_STEPS}; this one has: {', '.join(given) or 'none'}"
            )
        return self


def _default_steps() -> list[Step]:
    return [Step(run={})]


class Answer(_Model):
    """One seeded answer of a stand-in's operation: `result` answers a call whose arguments
    contain `when` (a subset, compared as ``expect`` compares); without `when`, every call."""

    when: dict[str, JsonValue] | None = None
    result: JsonValue = Field(description="What the call returns.")


SeededAnswer = Annotated[
    list[Answer] | JsonValue,
    Field(
        union_mode="left_to_right",
        description="A list of `{when, result}` (the first that matches answers), or any "
        "other JSON value: the answer to every call.",
    ),
]


class StandInSeed(_Model):
    """Seed data of a connector that is not a double (a ``keep.toml`` or plugin connector).

    In a case such a connector is a recording stand-in with the real one's operations:
    a read answers from `answers` (a read with no answer fails the case), a mutation or
    durable operation is recorded and answers from `results` (default ``{}``; a durable
    operation without a result waits for a ``notify`` step).
    """

    answers: dict[str, SeededAnswer] = Field(
        default_factory=dict, description="Read operation name → its answer."
    )
    results: dict[str, SeededAnswer] = Field(
        default_factory=dict,
        description="Mutation or durable operation name → its result.",
    )


ConnectorSeeds = dict[
    str, Annotated[StandInSeed | dict[str, Any], Field(union_mode="left_to_right")]
]
"""Seed data by connector name: a double's data (the shape ``keep run --seed`` takes) or a
stand-in's `StandInSeed`."""


class Case(_Model):
    """One case of a case file: its seed data, its steps and what it expects at the end."""

    name: str = Field(min_length=1)
    description: str = ""
    connectors: ConnectorSeeds = Field(
        default_factory=dict,
        description="This case's seed data (replaces the file's, connector by connector).",
    )
    live: list[str] | None = Field(
        default=None,
        description="Connectors that call the real service in this case (default: the "
        "file's `live`).",
    )
    grants: list[str] | None = None
    start: AwareDatetime | None = Field(
        default=None, description="Where the clock starts (default: the file's, or CASE_START)."
    )
    steps: list[Step] = Field(default_factory=_default_steps, description="Default: one run.")
    expect: Expectation = Field(default_factory=Expectation)


class CaseFile(_Model):
    """A ``*.keep.yaml`` file: the workflow under test and its cases."""

    workflow: str = Field(description="Path of the script, relative to the case file.")
    grants: list[str] | None = Field(
        default=None, description="Default: every permission the installation's connectors declare."
    )
    connectors: ConnectorSeeds = Field(
        default_factory=dict,
        description="Seed data of the doubles and the stand-ins, for every case.",
    )
    live: list[str] = Field(
        default_factory=list,
        description="Connectors that call the real service instead of a recording stand-in.",
    )
    start: AwareDatetime | None = Field(default=None, description="Where every clock starts.")
    cases: list[Case] = Field(min_length=1)

    @model_validator(mode="after")
    def _unique_names(self) -> CaseFile:
        names = [case.name for case in self.cases]
        repeated = sorted({n for n in names if names.count(n) > 1})
        if repeated:
            raise ValueError(f"case names must be unique; repeated: {', '.join(repeated)}")
        return self


class Scenario(_Model):
    """A conformance scenario: a script, the world it runs in, the steps, the end state."""

    name: str
    description: str
    covers: list[str] = Field(default_factory=list, description="Spec patterns and paths.")
    script: str
    connectors: dict[str, dict[str, Any]] = Field(default_factory=dict)
    grants: list[str] | None = None
    policy: dict[str, Any] = Field(
        default_factory=dict, description="HostPolicy overrides of the runner's fast defaults."
    )
    start: AwareDatetime | None = None
    steps: list[Step]
    expect: Expectation
